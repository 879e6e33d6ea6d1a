package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
)

// lockedBuffer is a bytes.Buffer for output written by several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// fakeConfig runs the test binary as the fake agent in mode.
func fakeConfig(t *testing.T, mode, prompt string) (*Config, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	t.Setenv(fakeAgentEnv, mode)
	// A race-enabled binary sleeps a second on exit unless told not to.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	return &Config{
		Agent:       []string{exe},
		Cwd:         t.TempDir(),
		Prompt:      prompt,
		Format:      FormatJSON,
		InitTimeout: 10 * time.Second,
		Stdout:      stdout,
		Stderr:      stderr,
	}, stdout, stderr
}

// events decodes NDJSON output.
func events(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// messages joins the text of the agent's message chunks.
func messages(evs []map[string]any) string {
	var b strings.Builder
	for _, ev := range evs {
		u, _ := ev["update"].(map[string]any)
		if u != nil && u["sessionUpdate"] == "agent_message_chunk" {
			c, _ := u["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"no agent", Config{Prompt: "x"}, "no agent command"},
		{"empty prompt", Config{Agent: []string{"true"}, Prompt: " \n"}, "prompt is empty"},
		{"cwd missing", Config{Agent: []string{"true"}, Prompt: "x", Cwd: filepath.Join(dir, "nope")}, "not a directory"},
		{"root missing", Config{Agent: []string{"true"}, Prompt: "x", Cwd: dir, Roots: []string{filepath.Join(dir, "nope")}}, "--root"},
		{"cwd outside roots", Config{Agent: []string{"true"}, Prompt: "x", Cwd: dir, Roots: []string{other}}, "outside every --root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			tt.cfg.Stderr = &stderr
			if code := Run(context.Background(), &tt.cfg); code != ExitUsage {
				t.Fatalf("exit %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(stderr.String(), tt.msg) {
				t.Fatalf("stderr %q lacks %q", stderr.String(), tt.msg)
			}
		})
	}
}

func TestRunStopReasons(t *testing.T) {
	for reason, want := range map[acp.StopReason]int{
		acp.StopReasonEndTurn:         ExitOK,
		acp.StopReasonRefusal:         ExitRefusal,
		acp.StopReasonMaxTokens:       ExitLimit,
		acp.StopReasonMaxTurnRequests: ExitLimit,
		"made_up":                     ExitAgent,
	} {
		t.Run(string(reason), func(t *testing.T) {
			cfg, stdout, stderr := fakeConfig(t, "stop:"+string(reason), "hi")
			if code := Run(context.Background(), cfg); code != want {
				t.Fatalf("exit %d, want %d; stderr %s", code, want, stderr)
			}
			evs := events(t, stdout.String())
			last := evs[len(evs)-1]
			if want == ExitAgent {
				if last["event"] != "error" || !strings.Contains(stderr.String(), "unknown stop reason") {
					t.Fatalf("last event %v, stderr %q", last, stderr)
				}
				return
			}
			if last["event"] != "stop" || last["stopReason"] != string(reason) {
				t.Fatalf("last event %v", last)
			}
		})
	}
}

func TestRunPermission(t *testing.T) {
	for _, tt := range []struct {
		approval permission.Approval
		outcome  string
		decision string
	}{
		{permission.ApprovalAll, "selected yes-once", "allow_once"},
		{permission.ApprovalNone, "selected no", "reject_once"},
		{permission.ApprovalAsk, "selected no", "reject_once"}, // no TTY
	} {
		cfg, stdout, stderr := fakeConfig(t, "perm", "hi")
		cfg.Approval = tt.approval
		if code := Run(context.Background(), cfg); code != ExitOK {
			t.Fatalf("exit %d; stderr %s", code, stderr)
		}
		evs := events(t, stdout.String())
		if got := messages(evs); !strings.Contains(got, "outcome: "+tt.outcome) {
			t.Errorf("approval %d: agent says %q, want outcome %q", tt.approval, got, tt.outcome)
		}
		found := false
		for _, ev := range evs {
			if ev["event"] == "permission" {
				found = true
				if ev["decision"] != tt.decision || ev["toolCallId"] != "call_1" || ev["title"] != "touch the thing" {
					t.Errorf("permission event %v", ev)
				}
			}
		}
		if !found {
			t.Errorf("no permission event in %s", stdout)
		}
		if noTTY := strings.Contains(stderr.String(), "no TTY"); noTTY != (tt.approval == permission.ApprovalAsk) {
			t.Errorf("approval %d: stderr %q", tt.approval, stderr)
		}
	}
}

// TestRunCancelPendingPermission: Ctrl-C while a permission question is
// open answers it "cancelled"; the turn ends cancelled, exit 130.
func TestRunCancelPendingPermission(t *testing.T) {
	cfg, stdout, stderr := fakeConfig(t, "perm", "hi")
	inR, inW := io.Pipe()
	defer inW.Close()
	screen := newScreen()
	cfg.TTYIn, cfg.TTYOut = inR, screen
	sigs := make(chan os.Signal, 1)
	cfg.Interrupts = sigs
	done := make(chan int, 1)
	go func() { done <- Run(context.Background(), cfg) }()
	screen.expect(t, "touch the thing")
	sigs <- os.Interrupt
	code := <-done
	if code != ExitCancelled {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitCancelled, stderr)
	}
	evs := events(t, stdout.String())
	if got := messages(evs); !strings.Contains(got, "outcome: cancelled") {
		t.Fatalf("agent says %q", got)
	}
	if last := evs[len(evs)-1]; last["event"] != "stop" || last["stopReason"] != "cancelled" {
		t.Fatalf("last event %v", last)
	}
	if !strings.Contains(stderr.String(), "cancelling the turn") {
		t.Fatalf("stderr %q", stderr)
	}
}

func TestRunFS(t *testing.T) {
	cfg, stdout, stderr := fakeConfig(t, "fs", "")
	root := cfg.Cwd
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Prompt = strings.Join([]string{
		"read " + filepath.Join(root, "a.txt") + " 2 1",
		"write " + filepath.Join(root, "b.txt") + " written",
		"read " + filepath.Join(root, "b.txt"),
		"read /etc/passwd",
		"write " + filepath.Join(root, "no", "c.txt") + " x",
	}, "\n")
	if code := Run(context.Background(), cfg); code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	got := messages(events(t, stdout.String()))
	for _, want := range []string{
		`read ok: "2\n"`, "write ok", `read ok: "written"`,
		"read error -32602: invalid params: path \"/etc/passwd\" is outside the workspace",
		"write error -32602", "does not exist",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("agent's report lacks %q:\n%s", want, got)
		}
	}
}

func TestRunGarbageMidTurn(t *testing.T) {
	cfg, _, stderr := fakeConfig(t, "garbage-turn", "hi")
	start := time.Now()
	if code := Run(context.Background(), cfg); code != ExitAgent {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitAgent, stderr)
	}
	if !strings.Contains(stderr.String(), "protocol error: the agent wrote 5 lines that are not ACP JSON-RPC") {
		t.Fatalf("stderr %q", stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

// stuckWriter blocks every Write whose data holds marker until release is
// closed, telling blocked when it first does: a stdout nobody reads.
type stuckWriter struct {
	marker  string
	blocked chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(w.marker)) {
		w.once.Do(func() { close(w.blocked) })
		<-w.release
	}
	return len(p), nil
}

// watchWriter closes seen once what was written to it holds want.
type watchWriter struct {
	lockedBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.lockedBuffer.Write(p)
	if strings.Contains(w.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// TestRunInterruptWhileStdoutStuck: a Ctrl-C while the renderer is
// blocked writing to a stdout nobody reads still cancels the turn and
// says so on stderr at once; it used to wait for the renderer's lock.
func TestRunInterruptWhileStdoutStuck(t *testing.T) {
	for name, format := range map[string]Format{"json": FormatJSON, "text": FormatText} {
		t.Run(name, func(t *testing.T) {
			cfg, _, _ := fakeConfig(t, "chatty", "hi")
			cfg.Format = format
			out := &stuckWriter{marker: "chatty says", blocked: make(chan struct{}), release: make(chan struct{})}
			errs := &watchWriter{want: "cancelling the turn", seen: make(chan struct{})}
			cfg.Stdout, cfg.Stderr = out, errs
			sigs := make(chan os.Signal, 1)
			cfg.Interrupts = sigs
			done := make(chan int, 1)
			go func() { done <- Run(context.Background(), cfg) }()
			<-out.blocked
			sigs <- os.Interrupt
			select {
			case <-errs.seen:
			case <-time.After(10 * time.Second):
				close(out.release)
				<-done
				t.Fatalf("no word of the cancel on stderr within 10 s while stdout was stuck; stderr %q", errs.String())
			}
			close(out.release)
			if code := <-done; code != ExitCancelled {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitCancelled, errs.String())
			}
		})
	}
}
