//go:build unix

package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// pipeEnd is one end of two os.Pipes: it reads one and writes the other.
type pipeEnd struct{ r, w *os.File }

func (p *pipeEnd) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeEnd) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeEnd) Close() error                { return errors.Join(p.w.Close(), p.r.Close()) }

// remoteTerminalsOn serves an exec server in-process in dir, over pipes,
// and returns remote terminals on it that decide with decide.
func remoteTerminalsOn(t *testing.T, dir string, decide func(context.Context, terminal.Info) terminal.Decision) *remoteTerminals {
	t.Helper()
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- remote.Serve(ctx, &pipeEnd{r: r2, w: w1}, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: dir}})
	}()
	c, err := remote.NewClient(ctx, &pipeEnd{r: r1, w: w2}, nil)
	if err != nil {
		cancel()
		<-served
		t.Fatal(err)
	}
	r := &remoteRun{where: "ssh://test" + dir, host: "ssh://test", client: c}
	rt := newRemoteTerminals(r, decide, nil, func(line string) { t.Log(line) })
	t.Cleanup(func() {
		_ = rt.Close()
		cancel()
		<-served
	})
	return rt
}

// TestRemoteTerminalsDecideFirst: the user is asked here, about the
// command with the directory it will run in and the target it runs on,
// before anything is sent; a refusal runs nothing there, an approval runs
// exactly what was shown.
func TestRemoteTerminalsDecideFirst(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	var mu sync.Mutex
	var asked []terminal.Info
	allow := false
	rt := remoteTerminalsOn(t, dir, func(_ context.Context, info terminal.Info) terminal.Decision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, info)
		if allow {
			return terminal.Allow()
		}
		return terminal.Deny("the user refused")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := rt.events()
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	req := &acp.CreateTerminalRequest{SessionID: "s", Command: "touch ran"}
	_, err = rt.CreateTerminal(ctx, req)
	if acp.ErrorCode(err) != acp.CodePermissionDenied || err.Error() != "permission denied: the user refused" {
		t.Fatalf("refused create: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the refused command ran there")
	}
	if _, err := rt.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "true", Cwd: ptr("rel")}); acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("a relative cwd: %v", err)
	}
	mu.Lock()
	allow = true
	mu.Unlock()
	resp, err := rt.CreateTerminal(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("asked %d times, want 2 (not for the relative cwd)", len(asked))
	}
	for _, a := range asked {
		if a.Command != "touch ran" || !a.Shell || a.Cwd != dir || a.Where != "ssh://test" {
			t.Errorf("asked about %+v", a)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the approved command did not run there: %v", err)
	}
	ev, err := sub.Next(ctx)
	if err != nil || ev.Kind != terminal.EventCreated || ev.Info.Command != "touch ran" || ev.Info.Where != "ssh://test" || ev.Info.Cwd != dir {
		t.Fatalf("first event %+v %+v, %v", ev, ev.Info, err)
	}
	if ts := rt.Terminals("s"); len(ts) != 1 || ts[0].PID != 0 {
		t.Errorf("Terminals = %+v: want one, without the target's PID", ts)
	}
}
