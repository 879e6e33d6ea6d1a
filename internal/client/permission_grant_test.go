package client

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// questionTTY is the prompter's screen in a test: it hands each question
// written to the test, which types the answer.
type questionTTY struct {
	mu   sync.Mutex
	all  strings.Builder
	asks chan string
}

func (q *questionTTY) Write(p []byte) (int, error) {
	q.mu.Lock()
	q.all.Write(p)
	q.mu.Unlock()
	if s := string(p); strings.Contains(s, "allow? ") {
		q.asks <- s
	}
	return len(p), nil
}

// ompPermission is omp 18.2.3's session/request_permission for its bash
// tool call, and ompCreate the terminal/create that the call then makes
// (ACP-NOTES §12: /bin/bash -l -c CMD, outputByteLimit 51200).
const (
	ompPermission = `{"sessionId":"s1","toolCall":{"toolCallId":"call_bash_1","title":"echo hello-from-omp","kind":"execute","status":"pending","rawInput":{"command":"echo hello-from-omp"}},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always allow","kind":"allow_always"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`
	ompCreate     = `{"sessionId":"s1","command":"/bin/bash","args":["-l","-c","echo hello-from-omp"],"cwd":"/w","outputByteLimit":51200}`
)

func createInfo(t *testing.T, raw string) terminal.Info {
	t.Helper()
	var req acp.CreateTerminalRequest
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	info := terminal.Info{SessionID: string(req.SessionID), Command: req.Command, Args: req.Args, Cwd: "/w"}
	if req.Cwd != nil {
		info.Cwd = string(*req.Cwd)
	}
	for _, e := range req.Env {
		info.Env = append(info.Env, terminal.EnvVar{Name: e.Name, Value: e.Value})
	}
	return info
}

// TestOneQuestionPerCommand: omp asks with session/request_permission,
// then runs the command with terminal/create; after a yes to the first,
// acpterm does not ask about the second, which runs exactly the command
// the question showed. Any other command, the same one again, or one with
// variables set is asked about.
func TestOneQuestionPerCommand(t *testing.T) {
	keys, typed := io.Pipe()
	tty := &questionTTY{asks: make(chan string, 8)}
	var mu sync.Mutex
	var events []PermissionEvent
	a := newApprover(ApprovalAsk, newPrompter(keys, tty, nil), func(e PermissionEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}, func(string) {})
	defer a.prompt.Close()
	answer := func(key string) string {
		q := <-tty.asks
		if _, err := typed.Write([]byte(key)); err != nil {
			t.Error(err)
		}
		return q
	}

	var req acp.RequestPermissionRequest
	if err := json.Unmarshal([]byte(ompPermission), &req); err != nil {
		t.Fatal(err)
	}
	got := make(chan *acp.RequestPermissionResponse)
	go func() {
		resp, _ := a.RequestPermission(context.Background(), &req)
		got <- resp
	}()
	q := answer("y")
	if !strings.Contains(q, "command: 'echo hello-from-omp'") || !strings.Contains(q, "run exactly this command once, in any directory of the workspace") {
		t.Errorf("the question does not show the command a yes lets run:\n%s", q)
	}
	if o, ok := (<-got).Outcome.(*acp.SelectedPermissionOutcome); !ok || o.OptionID != "allow" {
		t.Fatalf("outcome %#v, want allow", o)
	}

	// decide is DecideTerminal, answering no to a question it asks.
	decide := func(create string) (d terminal.Decision, asked bool) {
		res := make(chan terminal.Decision, 1)
		info := createInfo(t, create)
		go func() { res <- a.DecideTerminal(context.Background(), info) }()
		select {
		case <-tty.asks:
			if _, err := typed.Write([]byte("n")); err != nil {
				t.Fatal(err)
			}
			return <-res, true
		case d := <-res:
			return d, false
		}
	}
	// The terminal/create of that tool call: no second question.
	if d, asked := decide(ompCreate); asked || !d.Allow {
		t.Fatalf("the approved command: asked again %v, allowed %v", asked, d.Allow)
	}
	// The grant is used up, and covers nothing else.
	for _, create := range []string{
		ompCreate, // again
		`{"sessionId":"s1","command":"/bin/bash","args":["-l","-c","echo hello-from-omp; rm -rf ~"]}`,
		`{"sessionId":"s1","command":"bash","args":["-c","echo hello-from-omp"]}`,
		`{"sessionId":"s1","command":"/bin/bash","args":["-l","-c","echo hello-from-omp"],"env":[{"name":"BASH_ENV","value":"/tmp/x"}]}`,
	} {
		if d, asked := decide(create); !asked || d.Allow {
			t.Errorf("%s: asked %v, allowed %v; want a question, answered no", create, asked, d.Allow)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 6 || events[1].Reason != "allowed with the agent's question for this command" || events[1].ToolCallID != "call_bash_1" {
		t.Errorf("permission events: %+v", events)
	}
}

// TestGrantMatches: what a grant covers, argv by argv.
func TestGrantMatches(t *testing.T) {
	argv := grant{sid: "s", argv: []string{"ls", "-l"}, cwd: "/w"}
	line := grant{sid: "s", line: "ls -l"}
	for _, tc := range []struct {
		g    grant
		info terminal.Info
		want bool
	}{
		{argv, terminal.Info{SessionID: "s", Command: "ls", Args: []string{"-l"}, Cwd: "/w"}, true},
		{argv, terminal.Info{SessionID: "s", Command: "ls", Args: []string{"-l"}, Cwd: "/w/sub"}, false},
		{argv, terminal.Info{SessionID: "t", Command: "ls", Args: []string{"-l"}, Cwd: "/w"}, false},
		{argv, terminal.Info{SessionID: "s", Command: "ls -l", Cwd: "/w"}, false},
		{argv, terminal.Info{SessionID: "s", Command: "ls", Args: []string{"-l", "/"}, Cwd: "/w"}, false},
		{line, terminal.Info{SessionID: "s", Command: "ls -l", Cwd: "/any"}, true},
		{line, terminal.Info{SessionID: "s", Command: "/bin/sh", Args: []string{"-c", "ls -l"}}, true},
		{line, terminal.Info{SessionID: "s", Command: "/usr/bin/bash", Args: []string{"-lc", "ls -l"}}, true},
		{line, terminal.Info{SessionID: "s", Command: "/tmp/sh", Args: []string{"-c", "ls -l"}}, false},
		{line, terminal.Info{SessionID: "s", Command: "/bin/sh", Args: []string{"-c", "ls -l", "x"}}, false},
		{line, terminal.Info{SessionID: "s", Command: "/bin/sh", Args: []string{"-ic", "ls -l"}}, false},
		{line, terminal.Info{SessionID: "s", Command: "ls", Args: []string{"-l"}}, false},
	} {
		if got := tc.g.matches(&tc.info); got != tc.want {
			t.Errorf("%+v matches %+v: %v, want %v", tc.g, tc.info, got, tc.want)
		}
	}
}
