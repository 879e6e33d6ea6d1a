package display

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// scriptedTerminals is a TerminalHandler whose commands are scripts:
// "exit0" and "exit3" end at once, "hang" runs until killed.
type scriptedTerminals struct {
	minimalClient
	mu       sync.Mutex
	terms    map[acp.TerminalID]*scriptedTerm
	calls    []string
	updates  []acp.SessionUpdate
	waiting  chan struct{} // receives when a wait_for_exit starts
	released chan acp.TerminalID
	updated  chan struct{} // receives after each session/update
}

type scriptedTerm struct {
	done chan struct{}
	code *uint32
	sig  *string
}

func newScripted() *scriptedTerminals {
	return &scriptedTerminals{terms: map[acp.TerminalID]*scriptedTerm{}, waiting: make(chan struct{}, 8), released: make(chan acp.TerminalID, 8), updated: make(chan struct{}, 8)}
}

func (s *scriptedTerminals) note(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

func (s *scriptedTerminals) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, n.Update)
	s.updated <- struct{}{}
	return nil
}

func (s *scriptedTerminals) CreateTerminal(_ context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	s.note("create")
	t := &scriptedTerm{done: make(chan struct{})}
	switch req.Command {
	case "exit0":
		t.code = acp.Ptr(uint32(0))
		close(t.done)
	case "exit3":
		t.code = acp.Ptr(uint32(3))
		close(t.done)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := acp.TerminalID("t" + string(rune('0'+len(s.terms))))
	s.terms[id] = t
	return &acp.CreateTerminalResponse{TerminalID: id}, nil
}

func (s *scriptedTerminals) term(id acp.TerminalID) (*scriptedTerm, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.terms[id]
	if !ok {
		return nil, acp.ErrInvalidParams
	}
	return t, nil
}

func (s *scriptedTerminals) TerminalOutput(_ context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	s.note("output")
	t, err := s.term(req.TerminalID)
	if err != nil {
		return nil, err
	}
	resp := &acp.TerminalOutputResponse{Output: "out\n"}
	select {
	case <-t.done:
		resp.ExitStatus = &acp.TerminalExitStatus{ExitCode: t.code, Signal: t.sig}
	default:
	}
	return resp, nil
}

func (s *scriptedTerminals) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	s.note("wait")
	t, err := s.term(req.TerminalID)
	if err != nil {
		return nil, err
	}
	s.waiting <- struct{}{}
	select {
	case <-t.done:
		return &acp.WaitForTerminalExitResponse{ExitCode: t.code, Signal: t.sig}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *scriptedTerminals) KillTerminal(_ context.Context, req *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	s.note("kill")
	t, err := s.term(req.TerminalID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-t.done:
	default:
		t.sig = acp.Ptr("SIGTERM")
		close(t.done)
	}
	return nil, nil
}

func (s *scriptedTerminals) ReleaseTerminal(_ context.Context, req *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	s.note("release")
	s.released <- req.TerminalID
	return nil, nil
}

func (s *scriptedTerminals) snapshot() ([]string, []acp.SessionUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...), append([]acp.SessionUpdate(nil), s.updates...)
}

func initialized(t *testing.T, client acp.Client) *acp.AgentConn {
	t.Helper()
	cc, ac := pair(t, minimalAgent{}, client)
	if _, err := cc.Initialize(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return ac
}

func TestRunCommand(t *testing.T) {
	for _, tc := range []struct {
		name       string
		command    string
		timeout    time.Duration
		outputText int
		wantStatus acp.ToolCallStatus
		wantCalls  string
		wantRaw    string
		wantText   string // "" means no text content
	}{
		{"exit0", "exit0", 0, 0, acp.ToolCallStatusCompleted, "create wait output release", `{"exitCode":0,"signal":null,"truncated":false}`,
			"```\nout\n```\nexit 0"},
		{"exit3", "exit3", 0, 0, acp.ToolCallStatusFailed, "create wait output release", `{"exitCode":3,"signal":null,"truncated":false}`,
			"```\nout\n```\nexit 3"},
		{"timeout", "hang", time.Millisecond, 0, acp.ToolCallStatusFailed, "create wait kill wait output release", `{"exitCode":null,"signal":"SIGTERM","truncated":false,"timedOut":true}`,
			"```\nout\n```\ntimed out, killed by SIGTERM"},
		{"text cut to 2 bytes", "exit0", 0, 2, acp.ToolCallStatusCompleted, "create wait output release", `{"exitCode":0,"signal":null,"truncated":false}`,
			"```\nt\n```\nexit 0; output truncated, the last 2 bytes shown"},
		{"no text", "exit0", 0, -1, acp.ToolCallStatusCompleted, "create wait output release", `{"exitCode":0,"signal":null,"truncated":false}`,
			""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newScripted()
			ac := initialized(t, client)
			res, err := RunCommand(context.Background(), ac, &acp.CreateTerminalRequest{SessionID: "s1", Command: tc.command},
				&CommandOptions{ToolCallID: "call_1", Timeout: tc.timeout, OutputText: tc.outputText})
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != "out\n" || res.TimedOut != (tc.timeout > 0) || res.ToolCallID != "call_1" || res.Cancelled {
				t.Errorf("result = %+v", res)
			}
			<-client.updated
			<-client.updated
			calls, updates := client.snapshot()
			got := joinWords(calls)
			if tc.timeout > 0 {
				// The timeout may withdraw the first wait_for_exit before
				// the client has seen it.
				got = strings.Replace(got, "create kill", "create wait kill", 1)
			}
			if got != tc.wantCalls {
				t.Errorf("calls = %q, want %q", got, tc.wantCalls)
			}
			if len(updates) != 2 {
				t.Fatalf("got %d updates, want 2", len(updates))
			}
			checkRunCommandUpdates(t, updates, res.TerminalID, tc.command, tc.wantStatus, tc.wantRaw, tc.wantText)
		})
	}
}

// checkRunCommandUpdates checks the tool call TestRunCommand announced
// and its final update.
func checkRunCommandUpdates(t *testing.T, updates []acp.SessionUpdate, tid acp.TerminalID, command string, wantStatus acp.ToolCallStatus, wantRaw, wantText string) {
	t.Helper()
	call, ok := updates[0].(*acp.ToolCall)
	if !ok || call.Kind != acp.ToolKindExecute || call.Status != acp.ToolCallStatusInProgress || call.Title != command ||
		len(call.Content) != 1 || call.Content[0].(*acp.Terminal).TerminalID != tid {
		t.Errorf("announcement = %#v", updates[0])
	}
	upd, ok := updates[1].(*acp.ToolCallUpdate)
	if !ok || upd.Status == nil || *upd.Status != wantStatus {
		t.Fatalf("final update = %#v", updates[1])
	}
	if !jsonEqual(upd.RawOutput, []byte(wantRaw)) {
		t.Errorf("rawOutput = %s, want %s", upd.RawOutput, wantRaw)
	}
	// The terminal first, for clients that render it; then the text, for
	// those that do not.
	want := []acp.ToolCallContent{acp.TerminalContent(tid)}
	if wantText != "" {
		want = append(want, acp.TextToolCallContent(wantText))
	}
	gotJSON, _ := json.Marshal(upd.Content)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("final content\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

func TestOutputText(t *testing.T) {
	code := func(c uint32) *uint32 { return &c }
	for _, tc := range []struct {
		name  string
		res   CommandResult
		limit int
		want  string
	}{
		{"no output", CommandResult{ExitStatus: acp.TerminalExitStatus{ExitCode: code(0)}}, 100, "(no output)\nexit 0"},
		{"no final newline", CommandResult{ExitStatus: acp.TerminalExitStatus{ExitCode: code(1)}, Output: "a\nb"}, 100, "```\na\nb\n```\nexit 1"},
		{"cut by the client", CommandResult{ExitStatus: acp.TerminalExitStatus{ExitCode: code(0)}, Output: "tail\n", Truncated: true}, 100,
			"```\ntail\n```\nexit 0; output truncated, the last 5 bytes shown"},
		// "é" is two bytes: a 3-byte tail would start inside one.
		{"cut at a character start", CommandResult{ExitStatus: acp.TerminalExitStatus{ExitCode: code(0)}, Output: "éé"}, 3,
			"```\né\n```\nexit 0; output truncated, the last 2 bytes shown"},
		{"backticks in the output", CommandResult{ExitStatus: acp.TerminalExitStatus{Signal: acp.Ptr("SIGKILL")}, Output: "```go\nx\n````\n"}, 100,
			"`````\n```go\nx\n````\n`````\nkilled by SIGKILL"},
		{"signal wins over exit code", CommandResult{ExitStatus: acp.TerminalExitStatus{ExitCode: code(1), Signal: acp.Ptr("SIGINT")}, Cancelled: true, Output: "x\n"}, 100,
			"```\nx\n```\ncancelled, killed by SIGINT"},
		{"no status", CommandResult{Output: "x\n"}, 100, "```\nx\n```\nno exit status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outputText(&tc.res, tc.limit); got != tc.want {
				t.Errorf("outputText =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestExitStatusText(t *testing.T) {
	code := func(c uint32) *uint32 { return &c }
	for _, tc := range []struct {
		st   acp.TerminalExitStatus
		want string
	}{
		{acp.TerminalExitStatus{ExitCode: code(0)}, "exit 0"},
		{acp.TerminalExitStatus{ExitCode: code(3)}, "exit 3"},
		{acp.TerminalExitStatus{Signal: acp.Ptr("SIGTERM")}, "killed by SIGTERM"},
		{acp.TerminalExitStatus{ExitCode: code(1), Signal: acp.Ptr("SIGKILL")}, "killed by SIGKILL"},
		{acp.TerminalExitStatus{}, "no exit status"},
	} {
		if got := tc.st.String(); got != tc.want {
			t.Errorf("%+v: String() = %q, want %q", tc.st, got, tc.want)
		}
		if got := fmt.Sprint(&tc.st); got != tc.want {
			t.Errorf("%+v: Sprint(pointer) = %q, want %q", tc.st, got, tc.want)
		}
	}
	timedOut := CommandResult{ExitStatus: acp.TerminalExitStatus{Signal: acp.Ptr("SIGTERM")}, TimedOut: true}
	if got, want := timedOut.Status(), "timed out, killed by SIGTERM"; got != want {
		t.Errorf("Status() = %q, want %q", got, want)
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		req  acp.CreateTerminalRequest
		want string
	}{
		{acp.CreateTerminalRequest{Command: "go test ./... | tail -3"}, "go test ./... | tail -3"},
		{acp.CreateTerminalRequest{Command: "go", Args: []string{"test", "./..."}}, "go test ./..."},
		{acp.CreateTerminalRequest{Command: "printf", Args: []string{`%s\n`, "a b"}}, `printf '%s\n' 'a b'`},
	} {
		if got := commandLine(&tc.req); got != tc.want {
			t.Errorf("commandLine(%q %q) = %q, want %q", tc.req.Command, tc.req.Args, got, tc.want)
		}
	}
}

func TestRunCommandCancelled(t *testing.T) {
	client := newScripted()
	ac := initialized(t, client)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-client.waiting
		cancel()
	}()
	res, err := RunCommand(ctx, ac, &acp.CreateTerminalRequest{SessionID: "s1", Command: "hang"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res == nil || res.ExitStatus.Signal == nil || *res.ExitStatus.Signal != "SIGTERM" || res.TimedOut || !res.Cancelled || res.Succeeded() {
		t.Fatalf("result = %+v", res)
	}
	if id := <-client.released; id != res.TerminalID {
		t.Fatalf("released %q, want %q", id, res.TerminalID)
	}
	<-client.updated // the announcement
	<-client.updated // the final update
	calls, updates := client.snapshot()
	if got := joinWords(calls); got != "create wait kill wait output release" {
		t.Errorf("calls = %q", got)
	}
	upd, ok := updates[len(updates)-1].(*acp.ToolCallUpdate)
	if !ok || *upd.Status != acp.ToolCallStatusFailed || len(upd.Content) != 2 {
		t.Fatalf("final update = %#v", updates[len(updates)-1])
	}
	if text := upd.Content[1].(*acp.Content).Content.(*acp.TextContent).Text; text != "```\nout\n```\ncancelled, killed by SIGTERM" {
		t.Errorf("final text %q", text)
	}
	if !jsonEqual(upd.RawOutput, []byte(`{"exitCode":null,"signal":"SIGTERM","truncated":false,"cancelled":true}`)) {
		t.Errorf("rawOutput = %s", upd.RawOutput)
	}
}

func TestRunCommandWithoutCapability(t *testing.T) {
	ac := initialized(t, minimalClient{})
	_, err := RunCommand(context.Background(), ac, &acp.CreateTerminalRequest{SessionID: "s1", Command: "true"}, nil)
	if !errors.Is(err, acp.ErrNoTerminalCapability) {
		t.Fatalf("err = %v", err)
	}
}

func joinWords(ws []string) string {
	out := ""
	for i, w := range ws {
		if i > 0 {
			out += " "
		}
		out += w
	}
	return out
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
