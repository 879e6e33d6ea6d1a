package permission

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
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
	info := terminal.Info{SessionID: req.SessionID, Command: req.Command, Args: req.Args, Cwd: "/w"}
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
	var events []render.PermissionEvent
	a := New(ApprovalAsk, NewPrompter(keys, tty, nil, nil), func(e render.PermissionEvent) {
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
	t.Setenv("SHELL", "/home/u/bin/bash")
	argv := grant{sid: "s", argv: []string{"ls", "-l"}, cwd: "/w"}
	line := grant{sid: "s", line: "ls -l"}
	cd := grant{sid: "s", line: "cd /w/sub && make test"}
	cdQuoted := grant{sid: "s", line: "cd '/w/a b'&&ls"}
	cdWithCwd := grant{sid: "s", line: "cd /w/sub && ls", cwd: "/w"}
	cdRelative := grant{sid: "s", line: "cd sub && ls"}
	cdHome := grant{sid: "s", line: "cd ~/sub && ls"}
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
		// Shells by their absolute paths in the system's directories, or
		// the user's $SHELL exactly.
		{line, terminal.Info{SessionID: "s", Command: "/bin/zsh", Args: []string{"-l", "-c", "ls -l"}}, true},
		{line, terminal.Info{SessionID: "s", Command: "/opt/homebrew/bin/bash", Args: []string{"-l", "-c", "ls -l"}}, true},
		{line, terminal.Info{SessionID: "s", Command: "/home/u/bin/bash", Args: []string{"-l", "-c", "ls -l"}}, true}, // $SHELL
		{line, terminal.Info{SessionID: "s", Command: "/home/u/bin/../bin/bash", Args: []string{"-l", "-c", "ls -l"}}, false},
		{line, terminal.Info{SessionID: "s", Command: "/home/u/bin/zsh", Args: []string{"-l", "-c", "ls -l"}}, false},
		{line, terminal.Info{SessionID: "s", Command: "/w/bin/bash", Args: []string{"-l", "-c", "ls -l"}}, false},
		{line, terminal.Info{SessionID: "s", Command: "/usr/bin/python3", Args: []string{"-c", "ls -l"}}, false},
		{line, terminal.Info{SessionID: "s", Command: "/usr/local/bin/fish", Args: []string{"-c", "ls -l"}}, false},
		// "cd DIR && REST" run as REST in DIR (omp), DIR absolute.
		{cd, terminal.Info{SessionID: "s", Command: "/bin/bash", Args: []string{"-l", "-c", "make test"}, Cwd: "/w/sub"}, true},
		{cd, terminal.Info{SessionID: "s", Command: "make test", Cwd: "/w/sub/"}, true},
		{cd, terminal.Info{SessionID: "s", Command: "cd /w/sub && make test", Cwd: "/w"}, true},
		{cd, terminal.Info{SessionID: "s", Command: "/bin/bash", Args: []string{"-l", "-c", "make test"}, Cwd: "/w"}, false},
		{cd, terminal.Info{SessionID: "s", Command: "/bin/bash", Args: []string{"-l", "-c", "make"}, Cwd: "/w/sub"}, false},
		{cd, terminal.Info{SessionID: "s", Command: "/bin/bash", Args: []string{"-l", "-c", "make test"}, Cwd: "/w/sub", Env: []terminal.EnvVar{{Name: "A", Value: "b"}}}, false},
		{cdQuoted, terminal.Info{SessionID: "s", Command: "ls", Cwd: "/w/a b"}, true},
		{cdWithCwd, terminal.Info{SessionID: "s", Command: "ls", Cwd: "/w/sub"}, false},
		{cdRelative, terminal.Info{SessionID: "s", Command: "ls", Cwd: "/w/sub"}, false},
		{cdHome, terminal.Info{SessionID: "s", Command: "ls", Cwd: "/w/sub"}, false},
	} {
		if got := tc.g.matches(&tc.info); got != tc.want {
			t.Errorf("%+v matches %+v: %v, want %v", tc.g, tc.info, got, tc.want)
		}
	}
}

// TestCdPrefix: the "cd DIR && REST" lines whose DIR is known exactly.
func TestCdPrefix(t *testing.T) {
	for _, tc := range []struct{ line, dir, rest string }{
		{"cd /w/sub && make test", "/w/sub", "make test"},
		{"cd\t/w/sub/\t&&\tmake", "/w/sub", "make"},
		{"cd /w&&a && b; c", "/w", "a && b; c"},
		{"cd '/w/a b' && ls", "/w/a b", "ls"},
		{"cd /w/x-1.2_+,@%: && ls", "/w/x-1.2_+,@%:", "ls"},
		{"cd /w/../etc && ls", "/etc", "ls"}, // where the shell would go
		{"cd sub && ls", "", ""},
		{"cd ~/w && ls", "", ""},
		{"cd $HOME && ls", "", ""},
		{"cd /w/$X && ls", "", ""},
		{"cd /w/* && ls", "", ""},
		{`cd "/w" && ls`, "", ""},
		{`cd /w\ x && ls`, "", ""},
		{"cd '/w\nx' && ls", "", ""},
		{"cd '/w && ls", "", ""},
		{"cd /w; ls", "", ""},
		{"cd /w || ls", "", ""},
		{"cd /w & ls", "", ""},
		{"cd /w && ", "", ""},
		{"cd /w", "", ""},
		{"cd/w && ls", "", ""},
		{"cdx /w && ls", "", ""},
		{" cd /w && ls", "", ""},
	} {
		dir, rest, ok := cdPrefix(tc.line)
		if ok != (tc.dir != "") || dir != tc.dir || rest != tc.rest {
			t.Errorf("cdPrefix(%q) = %q, %q, %v; want %q, %q", tc.line, dir, rest, ok, tc.dir, tc.rest)
		}
	}
}

// FuzzCdPrefix: whatever the agent's line, a DIR taken from it is an
// absolute, clean path with no quote or line break, and REST is the
// line's end, not empty.
func FuzzCdPrefix(f *testing.F) {
	for _, s := range []string{"cd /w/sub && make", "cd '/a b'&&x", "cd sub && ls", "cd /w\x00 && ls", "cd '/w\n' && a", "cd /\xff && a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		dir, rest, ok := cdPrefix(line)
		if !ok {
			if dir != "" || rest != "" {
				t.Fatalf("not ok, yet %q, %q", dir, rest)
			}
			return
		}
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || strings.ContainsAny(dir, "'\n\r") {
			t.Fatalf("dir %q of %q", dir, line)
		}
		if rest == "" || !strings.HasSuffix(line, rest) || rest[0] == ' ' || rest[0] == '\t' {
			t.Fatalf("rest %q of %q", rest, line)
		}
		if !strings.HasPrefix(line, "cd ") && !strings.HasPrefix(line, "cd\t") {
			t.Fatalf("%q does not start with cd", line)
		}
	})
}

// TestOneQuestionReplay replays what real agents sent and asked
// (testdata/*.wire, recorded by cmd/acpterm's TestRealAgentsTTY through
// its wire recorder): their session/request_permission, answered yes as a
// person did, then the terminal/create it led to. Each file says how many
// questions acpterm must ask: one when the command that runs is the one
// the question showed, two when acpterm cannot tell.
func TestOneQuestionReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/*.wire")
	if err != nil || len(files) == 0 {
		t.Fatalf("no wire files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			sec := rendertest.ReadWire(t, file)
			t.Setenv("SHELL", "")
			for kv := range strings.Lines(sec["env"]) {
				k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
				t.Setenv(k, v)
			}
			want, err := strconv.Atoi(strings.TrimSpace(sec["questions"]))
			if err != nil {
				t.Fatalf("questions: %v", err)
			}
			if got := replayQuestions(t, sec["wire"]); got != want {
				t.Errorf("%d questions, want %d", got, want)
			}
		})
	}
}

// wireLine is one line of a recorded wire.
type wireLine struct {
	Dir string `json:"dir"`
	Msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
	} `json:"msg"`
}

// replayQuestions passes the agent's session/request_permission and
// terminal/create requests of wire to an approver that asks, answering
// yes, and returns how many questions it asked. Each answer to the
// agent's question must be the one recorded, and each command allowed.
func replayQuestions(t *testing.T, wire string) int {
	t.Helper()
	keys, typed := io.Pipe()
	tty := &questionTTY{asks: make(chan string, 8)}
	a := New(ApprovalAsk, NewPrompter(keys, tty, nil, nil), func(render.PermissionEvent) {}, func(string) {})
	defer a.prompt.Close()
	var lines []wireLine
	for l := range strings.Lines(wire) {
		var w wireLine
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("wire line %q: %v", l, err)
		}
		lines = append(lines, w)
	}
	// answered is what the recorded client answered each agent request.
	answered := map[string]json.RawMessage{}
	for _, w := range lines {
		if w.Dir == "client" && w.Msg.Method == "" {
			answered[string(w.Msg.ID)] = w.Msg.Result
		}
	}
	questions := 0
	// run calls f, answering yes to any question it asks.
	run := func(f func()) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f()
		}()
		for {
			select {
			case <-tty.asks:
				questions++
				if _, err := typed.Write([]byte("y")); err != nil {
					t.Fatal(err)
				}
			case <-done:
				return
			}
		}
	}
	seen := 0
	for _, w := range lines {
		if w.Dir != "agent" {
			continue
		}
		switch w.Msg.Method {
		case "session/request_permission":
			seen++
			var req acp.RequestPermissionRequest
			if err := json.Unmarshal(w.Msg.Params, &req); err != nil {
				t.Fatal(err)
			}
			var resp *acp.RequestPermissionResponse
			run(func() { resp, _ = a.RequestPermission(context.Background(), &req) })
			var rec acp.RequestPermissionResponse
			if err := json.Unmarshal(answered[string(w.Msg.ID)], &rec); err != nil {
				t.Fatalf("the recorded answer to %s: %v", w.Msg.ID, err)
			}
			got, _ := json.Marshal(resp)
			if want, _ := json.Marshal(&rec); string(got) != string(want) {
				t.Errorf("answered %s, recorded %s", got, want)
			}
		case "terminal/create":
			seen++
			info := createInfo(t, string(w.Msg.Params))
			var d terminal.Decision
			run(func() { d = a.DecideTerminal(context.Background(), info) })
			if !d.Allow {
				t.Errorf("terminal/create %s refused", w.Msg.Params)
			}
		}
	}
	if seen < 2 {
		t.Fatalf("the wire has %d questions and commands, want a question and its command", seen)
	}
	return questions
}
