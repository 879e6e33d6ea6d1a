package shellagent

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// termClient serves terminals with the real runtime and records updates.
type termClient struct {
	*terminal.Manager
	recorder
}

// recorder is a client without terminals that records updates.
type recorder struct {
	mu      sync.Mutex
	updates []acp.SessionUpdate
	calls   chan *acp.ToolCall // announced tool calls
}

func (c *recorder) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	if call, ok := n.Update.(*acp.ToolCall); ok && c.calls != nil {
		c.calls <- call
	}
	return nil
}

func (c *recorder) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

// connect serves a shell agent to client over in-memory pipes and opens a
// session in a temporary directory.
func connect(t *testing.T, client acp.Client, opts *Options) (*acp.ClientConn, acp.SessionID) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, toAgentR, toClientW, opts) }()
	cc := acp.NewClientConn(client, toClientR, toAgentW, nil)
	t.Cleanup(func() {
		cc.Close() // ends the agent's input: Serve returns nil
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		cancel()
	})
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	sess, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: t.TempDir(), MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return cc, sess.SessionID
}

func newTermClient(t *testing.T) *termClient {
	m := terminal.NewManager(&terminal.Options{KillGrace: 500 * time.Millisecond})
	t.Cleanup(func() { m.Close() })
	return &termClient{Manager: m, recorder: recorder{calls: make(chan *acp.ToolCall, 16)}}
}

func prompt(t *testing.T, cc *acp.ClientConn, sid acp.SessionID, text string) acp.StopReason {
	t.Helper()
	resp, err := cc.Prompt(context.Background(), &acp.PromptRequest{SessionID: sid, Prompt: []acp.ContentBlock{&acp.TextContent{Text: text}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StopReason
}

// finalMessage is the text of the last agent message, and the statuses of
// the tool calls in order of their final updates.
func (c *recorder) transcript() (message string, statuses []string, titles []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.updates {
		switch u := u.(type) {
		case *acp.AgentMessageChunk:
			message = u.Content.(*acp.TextContent).Text
		case *acp.ToolCall:
			titles = append(titles, u.Title)
		case *acp.ToolCallUpdate:
			statuses = append(statuses, string(*u.Status))
		}
	}
	return message, statuses, titles
}

// outputs maps each tool call's title to the content of its final update
// after the terminal: the output as text, for clients without terminals.
// It fails the test if a final update does not embed the terminal first.
func (c *recorder) outputs(t *testing.T) map[string]string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	titles := map[acp.ToolCallID]string{}
	texts := map[string]string{}
	for _, u := range c.updates {
		switch u := u.(type) {
		case *acp.ToolCall:
			titles[u.ToolCallID] = u.Title
		case *acp.ToolCallUpdate:
			if len(u.Content) != 2 {
				t.Fatalf("final update of %q has %d content items, want terminal and text", titles[u.ToolCallID], len(u.Content))
			}
			if _, ok := u.Content[0].(*acp.Terminal); !ok {
				t.Fatalf("final update of %q: first content %T, want the terminal", titles[u.ToolCallID], u.Content[0])
			}
			texts[titles[u.ToolCallID]] = u.Content[1].(*acp.Content).Content.(*acp.TextContent).Text
		}
	}
	return texts
}

func wantOutputs(t *testing.T, got, want map[string]string) {
	t.Helper()
	for title, w := range want {
		if got[title] != w {
			t.Errorf("text of %q:\n%s\nwant:\n%s", title, got[title], w)
		}
	}
}

func TestStopsAtFirstFailure(t *testing.T) {
	client := newTermClient(t)
	cc, sid := connect(t, client, nil)
	if stop := prompt(t, cc, sid, "echo hi\n\n  exit 3  \necho never"); stop != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %q", stop)
	}
	msg, statuses, titles := client.transcript()
	if strings.Join(titles, "|") != "echo hi|exit 3" || strings.Join(statuses, " ") != "completed failed" {
		t.Errorf("titles %q statuses %q", titles, statuses)
	}
	if want := "ok   echo hi: exit 0\nFAIL exit 3: exit 3\n2 of 3 commands ran, 1 failed, 1 not run."; msg != want {
		t.Errorf("summary:\n%s\nwant:\n%s", msg, want)
	}
	wantOutputs(t, client.outputs(t), map[string]string{
		"echo hi": "```\nhi\n```\nexit 0",
		"exit 3":  "(no output)\nexit 3",
	})
}

func TestKeepGoingAndTimeout(t *testing.T) {
	client := newTermClient(t)
	cc, sid := connect(t, client, &Options{KeepGoing: true, Timeout: 300 * time.Millisecond, OutputLimit: 8})
	prompt(t, cc, sid, "false\nsleep 30\necho 0123456789abcdef\npwd")
	msg, statuses, _ := client.transcript()
	if strings.Join(statuses, " ") != "failed failed completed completed" {
		t.Errorf("statuses %q", statuses)
	}
	for _, want := range []string{
		"FAIL false: exit 1\n", "FAIL sleep 30: timed out, killed by SIGTERM\n",
		"ok   echo 0123456789abcdef: exit 0, output truncated\n", "4 of 4 commands ran, 2 failed.",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("summary %q lacks %q", msg, want)
		}
	}
	wantOutputs(t, client.outputs(t), map[string]string{
		"false":    "(no output)\nexit 1",
		"sleep 30": "(no output)\ntimed out, killed by SIGTERM",
		// The client kept the last 8 bytes (OutputLimit).
		"echo 0123456789abcdef": "```\n9abcdef\n```\nexit 0; output truncated, the last 8 bytes shown",
	})
}

// TestLongOutput: output past display.DefaultOutputText reaches the tool call
// as its tail, and the summary says it was truncated.
func TestLongOutput(t *testing.T) {
	client := newTermClient(t)
	cc, sid := connect(t, client, nil)
	// 100000 lines "line N": about 690 KB, under the runtime's default
	// limit, so only RunCommand's cut applies.
	prompt(t, cc, sid, "seq -f 'line %g' 1 100000")
	msg, _, _ := client.transcript()
	if !strings.Contains(msg, "ok   seq -f 'line %g' 1 100000: exit 0, output truncated\n") {
		t.Errorf("summary %q", msg)
	}
	text := client.outputs(t)["seq -f 'line %g' 1 100000"]
	if !strings.HasSuffix(text, "line 99999\nline 100000\n```\nexit 0; output truncated, the last 65536 bytes shown") ||
		len(text) > display.DefaultOutputText+100 {
		t.Errorf("text: %d bytes ending %q", len(text), text[max(len(text)-200, 0):])
	}
}

func TestCancelKillsTheRunningCommand(t *testing.T) {
	client := newTermClient(t)
	cc, sid := connect(t, client, nil)
	go func() {
		<-client.calls
		cc.Cancel(context.Background(), &acp.CancelNotification{SessionID: sid})
	}()
	start := time.Now()
	if stop := prompt(t, cc, sid, "sleep 30\necho never"); stop != acp.StopReasonCancelled {
		t.Fatalf("stop reason %q", stop)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	if live := client.Terminals(sid); len(live) != 0 {
		t.Errorf("terminals left after cancel: %v", live)
	}
	msg, _, titles := client.transcript()
	if len(titles) != 1 || !strings.HasPrefix(msg, "FAIL sleep 30: cancelled, killed by SIG") {
		t.Errorf("titles %q, summary %q", titles, msg)
	}
	if text := client.outputs(t)["sleep 30"]; !strings.HasPrefix(text, "(no output)\ncancelled, killed by SIG") {
		t.Errorf("text of the cancelled command %q", text)
	}
}

func TestClientWithoutTerminals(t *testing.T) {
	client := &recorder{}
	cc, sid := connect(t, client, nil)
	if stop := prompt(t, cc, sid, "echo hi"); stop != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %q", stop)
	}
	msg, _, titles := client.transcript()
	if len(titles) != 0 || !strings.Contains(msg, "does not support terminals") {
		t.Errorf("titles %q, message %q", titles, msg)
	}
}

func TestBadRequests(t *testing.T) {
	client := newTermClient(t)
	cc, _ := connect(t, client, nil)
	ctx := context.Background()
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "relative/dir"}); acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("relative cwd: %v", err)
	}
	_, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "nope", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "true"}}})
	if acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("unknown session: %v", err)
	}
}

// TestExecAuto: a client without terminals gets its commands run by the
// agent itself, the output as text in the finished tool call.
func TestExecAuto(t *testing.T) {
	client := &recorder{}
	cc, sid := connect(t, client, &Options{Exec: ExecAuto})
	if stop := prompt(t, cc, sid, "echo hi\nexit 2"); stop != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %q", stop)
	}
	msg, _, titles := client.transcript()
	if len(titles) != 2 || !strings.HasPrefix(msg, "ok   echo hi: exit 0\nFAIL exit 2: exit 2") {
		t.Errorf("titles %q, summary %q", titles, msg)
	}
	client.mu.Lock()
	defer client.mu.Unlock()
	var texts []string
	for _, u := range client.updates {
		if tu, ok := u.(*acp.ToolCallUpdate); ok && len(tu.Content) == 1 {
			if c, ok := tu.Content[0].(*acp.Content); ok {
				texts = append(texts, c.Content.(*acp.TextContent).Text)
			}
		}
	}
	if want := []string{"```\nhi\n```\nexit 0", "(no output)\nexit 2"}; strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("tool call texts %q, want %q", texts, want)
	}
}

// TestBeforeLocal: the hook runs once, before the first command the agent
// runs itself, and never for an agent whose commands all run in the
// client's terminals.
func TestBeforeLocal(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	hook := func(name string) func() {
		return func() {
			mu.Lock()
			calls[name]++
			mu.Unlock()
		}
	}
	local := &recorder{}
	cc, sid := connect(t, local, &Options{Exec: ExecAuto, BeforeLocal: hook("local")})
	for range 2 {
		prompt(t, cc, sid, "true")
	}
	term := newTermClient(t)
	cc, sid = connect(t, term, &Options{Exec: ExecAuto, BeforeLocal: hook("client")})
	prompt(t, cc, sid, "true")
	mu.Lock()
	defer mu.Unlock()
	if calls["local"] != 1 || calls["client"] != 0 {
		t.Errorf("BeforeLocal calls %v, want local:1 and none for the client with terminals", calls)
	}
}
