//go:build unix

package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// The Client as a terminal.Runtime: what a local terminal.Manager does,
// it does over the connection.

// TestClientDecideFirst: the user is asked here, about the command with
// the directory it will run in and the target it runs on, before anything
// is sent; a refusal runs nothing there, an approval runs exactly what was
// shown, and the terminal's start describes it as asked.
func TestClientDecideFirst(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	var mu sync.Mutex
	var asked []terminal.Info
	allow := false
	decide := func(_ context.Context, info terminal.Info) terminal.Decision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, info)
		if allow {
			return terminal.Allow()
		}
		return terminal.Deny("the user refused")
	}
	s := serve(t, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: dir}},
		&remote.ClientOptions{KeepAlive: -1, Decide: decide, Where: "ssh://test"})
	ctx := testCtx(t)
	sub, err := s.c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	req := &acp.CreateTerminalRequest{SessionID: "s", Command: "touch ran"}
	_, err = s.c.CreateTerminal(ctx, req)
	if acp.ErrorCode(err) != acp.CodePermissionDenied || !errors.Is(err, terminal.ErrDenied) || err.Error() != "permission denied: the user refused" {
		t.Fatalf("refused create: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the refused command ran there")
	}
	if _, err := s.c.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "true", Cwd: ptr("rel")}); acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("a relative cwd: %v", err)
	}
	mu.Lock()
	allow = true
	mu.Unlock()
	resp, err := s.c.CreateTerminal(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(asked) != 2 {
		t.Fatalf("asked %d times, want 2 (not for the relative cwd)", len(asked))
	}
	for _, a := range asked {
		if a.Command != "touch ran" || !a.Shell || a.Cwd != dir || a.Where != "ssh://test" {
			t.Errorf("asked about %+v", a)
		}
	}
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the approved command did not run there: %v", err)
	}
	checkListed(t, s.c, sub, resp.TerminalID, dir)
}

// checkListed checks that the terminal's start describes it as asked,
// that Terminals lists it until its release and not after.
func checkListed(t *testing.T, c *remote.Client, sub terminal.Events, id acp.TerminalID, dir string) {
	t.Helper()
	ctx := testCtx(t)
	ev, err := sub.Next(ctx)
	if err != nil || ev.Kind != terminal.EventCreated || ev.Info.Command != "touch ran" || ev.Info.Where != "ssh://test" || ev.Info.Cwd != dir {
		t.Fatalf("first event %+v %+v, %v", ev, ev.Info, err)
	}
	if ts := c.Terminals("s"); len(ts) != 1 || ts[0].TerminalID != id || ts[0].Command != "touch ran" {
		t.Errorf("Terminals = %+v, want the one terminal", ts)
	}
	if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	for ev.Kind != terminal.EventReleased {
		if ev, err = sub.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ts := c.Terminals("s"); len(ts) != 0 {
		t.Errorf("Terminals after the release = %+v", ts)
	}
}

// TestSubscribeOneTerminal: a subscription to one terminal made after it
// ran starts with a replay (start, output, exit), sees its release and
// then ends; an unknown terminal is refused as locally.
func TestSubscribeOneTerminal(t *testing.T) {
	s := serve(t, nil, &remote.ClientOptions{KeepAlive: -1})
	ctx := testCtx(t)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "printf 'one\\ntwo\\n'"})
	if _, err := s.c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Subscribe("s", "nope"); !errors.Is(err, terminal.ErrNotFound) {
		t.Errorf("Subscribe of an unknown terminal: %v", err)
	}
	sub, err := s.c.Subscribe("s", id)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out strings.Builder
	for exited := false; !exited; {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case terminal.EventOutput:
			out.Write(ev.Data)
		case terminal.EventExited:
			exited = true
		}
	}
	if out.String() != "one\ntwo\n" {
		t.Errorf("replayed output %q", out.String())
	}
	if _, err := s.c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		t.Fatal(err)
	}
	if ev, err := sub.Next(ctx); err != nil || ev.Kind != terminal.EventReleased {
		t.Fatalf("after the release: %v, %v", ev.Kind, err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, terminal.ErrSubscriptionClosed) {
		t.Errorf("after the terminal's release the subscription gave %v, want ErrSubscriptionClosed", err)
	}
}

// TestKillAllNoGrace: KillAll SIGKILLs a command that ignores SIGTERM at
// once, with a minute of kill grace configured; the terminal stays for
// its status until released.
func TestKillAllNoGrace(t *testing.T) {
	s := serve(t, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: t.TempDir(), KillGrace: time.Minute}},
		&remote.ClientOptions{KeepAlive: -1})
	ctx := testCtx(t)
	id := create(t, s.c, &acp.CreateTerminalRequest{Command: "trap '' TERM; echo ready; sleep 1000"})
	for {
		out, err := s.c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.Output, "ready") {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling the tail: nothing to wait on over the wire
	}
	start := time.Now()
	if err := s.c.KillAll(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := s.c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatal(err)
	}
	if st.Signal == nil || *st.Signal != "SIGKILL" {
		t.Errorf("status %+v, want SIGKILL", st)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("KillAll took %v: the grace was waited out", took)
	}
}

// nopClient is the rest of an ACP client for the capability test.
type nopClient struct{}

func (nopClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}
func (nopClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

// TestEmbeddingAdvertisesTerminalsOnly: on the wire, a client that
// embeds a *remote.Client advertises terminals and not fs; fs read and
// write come only with the target's Files, embedded by choice.
func TestEmbeddingAdvertisesTerminalsOnly(t *testing.T) {
	s := serve(t, nil, &remote.ClientOptions{KeepAlive: -1})
	type termsOnly struct {
		*remote.Client
		nopClient
	}
	type withFiles struct {
		*remote.Client
		*remote.Files
		nopClient
	}
	for _, tc := range []struct {
		name   string
		client acp.Client
		fs     bool
	}{
		{"Client", termsOnly{Client: s.c}, false},
		{"Client and Files", withFiles{Client: s.c, Files: s.c.Files()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := initializeCaps(t, tc.client)
			want := `{"fs":{},"terminal":true}`
			if tc.fs {
				want = `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}`
			}
			if caps != want {
				t.Errorf("clientCapabilities on the wire %s, want %s", caps, want)
			}
		})
	}
}

// initializeCaps sends initialize from a ClientConn serving client and
// returns the clientCapabilities as they went on the wire.
func initializeCaps(t *testing.T, client acp.Client) string {
	t.Helper()
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	cc := acp.NewClientConn(client, toClient, fromClient, nil)
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(toAgent)
		sc.Buffer(nil, 1<<20)
		if !sc.Scan() {
			got <- ""
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Caps json.RawMessage `json:"clientCapabilities"`
			} `json:"params"`
		}
		_ = json.Unmarshal(sc.Bytes(), &req)
		got <- string(req.Params.Caps)
		_, _ = io.WriteString(fromAgent, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"protocolVersion":1}}`+"\n")
		_, _ = io.Copy(io.Discard, toAgent)
	}()
	if _, err := cc.Initialize(testCtx(t), nil); err != nil {
		t.Fatal(err)
	}
	caps := <-got
	_ = fromClient.Close()
	_ = fromAgent.Close()
	_ = cc.Close()
	return caps
}

// TestCloseReleases: Close releases the client's terminals as
// terminal.Manager.Close does (the command ends by SIGTERM, its release
// is a real one), and the subscriptions then end with
// ErrSubscriptionClosed.
func TestCloseReleases(t *testing.T) {
	s := serve(t, nil, &remote.ClientOptions{KeepAlive: -1})
	ctx := testCtx(t)
	sub, err := s.c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	create(t, s.c, &acp.CreateTerminalRequest{Command: "sleep 1000"})
	if err := s.c.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			if !errors.Is(err, terminal.ErrSubscriptionClosed) {
				t.Errorf("the subscription ended with %v, want ErrSubscriptionClosed", err)
			}
			break
		}
		e := ev.Kind.String()
		if ev.Status != nil {
			e += " " + ev.Status.String()
		}
		if ev.Lost != "" {
			e += " lost: " + ev.Lost
		}
		got = append(got, e)
	}
	if want := "created exited killed by SIGTERM released"; strings.Join(got, " ") != want {
		t.Errorf("events %q, want %q", strings.Join(got, " "), want)
	}
}
