package probe

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/acpterm/acpterm/terminal"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The broken-client runs mostly wait out their cases' time limits.
	proctest.RaiseParallel(4 * runtime.GOMAXPROCS(0))
	goleak.VerifyTestMain(m)
}

// recorder is a client without terminals that records what the agent
// sends.
type recorder struct {
	mu      sync.Mutex
	updates []acp.SessionUpdate
	calls   chan *acp.ToolCall // announced tool calls, when not nil
}

func (c *recorder) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	if call, ok := n.Update.(*acp.ToolCall); ok && c.calls != nil {
		select {
		case c.calls <- call:
		default:
		}
	}
	return nil
}

func (c *recorder) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

// transcript is what the client saw: announced tool calls, their updates
// and the agent's messages.
type transcript struct {
	calls    []*acp.ToolCall
	updates  map[acp.ToolCallID][]*acp.ToolCallUpdate
	messages []string
}

func (c *recorder) transcript() transcript {
	c.mu.Lock()
	defer c.mu.Unlock()
	tr := transcript{updates: map[acp.ToolCallID][]*acp.ToolCallUpdate{}}
	for _, u := range c.updates {
		switch u := u.(type) {
		case *acp.ToolCall:
			tr.calls = append(tr.calls, u)
		case *acp.ToolCallUpdate:
			tr.updates[u.ToolCallID] = append(tr.updates[u.ToolCallID], u)
		case *acp.AgentMessageChunk:
			tr.messages = append(tr.messages, u.Content.(*acp.TextContent).Text)
		}
	}
	return tr
}

// termClient is acpterm's own client side: the real terminal runtime.
type termClient struct {
	acp.TerminalHandler
	*recorder
}

func newManager(t *testing.T) *terminal.Manager {
	m := terminal.NewManager(&terminal.Options{KillGrace: 500 * time.Millisecond})
	t.Cleanup(func() { m.Close() })
	return m
}

// heldCreate makes the first terminal/create wait until let is closed, so
// that a test can act while a case is surely under way.
type heldCreate struct {
	acp.TerminalHandler
	once sync.Once
	let  chan struct{}
}

func (h *heldCreate) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	first := false
	h.once.Do(func() { first = true })
	if first {
		select {
		case <-h.let:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.TerminalHandler.CreateTerminal(ctx, req)
}

// checkNoFIFOs fails the test if the probe left anything of its own in
// the session cwd (the cases that hold commands on FIFOs make them there).
func checkNoFIFOs(t *testing.T, cwd string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(cwd, ".acpterm-probe*"))
	if err != nil || len(left) != 0 {
		t.Errorf("left in the session cwd: %v %v", left, err)
	}
}

// testSession is a connected probe with an open session.
type testSession struct {
	cc  *acp.ClientConn
	sid acp.SessionID
	cwd string
}

// connect serves the probe to client over in-memory pipes and opens a
// session in a temporary directory. A *terminal.Manager, if given, learns
// the session's cwd, as acpterm's client driver does.
func connect(t *testing.T, client acp.Client, m *terminal.Manager, opts *Options) *testSession {
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
	init, err := cc.Initialize(ctx, &acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion1,
		ClientInfo:      &acp.Implementation{Name: "probe-test-client", Version: "1.2.3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if init.AgentInfo == nil || init.AgentInfo.Name != AgentName {
		t.Fatalf("agentInfo %+v", init.AgentInfo)
	}
	cwd := t.TempDir()
	sess, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if m != nil {
		if err := m.SetSessionCwd(ctx, sess.SessionID, cwd); err != nil {
			t.Fatal(err)
		}
	}
	return &testSession{cc: cc, sid: sess.SessionID, cwd: cwd}
}

func (s *testSession) prompt(t *testing.T) acp.StopReason {
	t.Helper()
	resp, err := s.cc.Prompt(context.Background(), &acp.PromptRequest{
		SessionID: s.sid,
		Prompt:    []acp.ContentBlock{&acp.TextContent{Text: "probe"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StopReason
}

func readReport(t *testing.T, path string) *Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report does not decode: %v\n%s", err, b)
	}
	return &rep
}

// probe runs the probe against client and returns the JSON report.
func probe(t *testing.T, client acp.Client, m *terminal.Manager, opts *Options) (*Report, *testSession) {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.JSONReport = filepath.Join(t.TempDir(), "report.json")
	s := connect(t, client, m, &o)
	if stop := s.prompt(t); stop != acp.StopReasonEndTurn {
		t.Fatalf("stop reason %q", stop)
	}
	rep := readReport(t, o.JSONReport)
	t.Logf("\n%s\n%s", rep.Headline(), rep.Table())
	return rep, s
}

func checkSummary(t *testing.T, rep *Report) {
	t.Helper()
	var want Summary
	for _, c := range rep.Cases {
		want.add(c.Result)
	}
	if rep.Summary != want {
		t.Errorf("summary %+v, counted %+v", rep.Summary, want)
	}
}

// TestAcptermClient runs the whole suite against acpterm's own client
// runtime: every normative case must pass, and the informational ones
// must see what the runtime is documented to do.
func TestAcptermClient(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	client := &termClient{TerminalHandler: m, recorder: &recorder{}}
	start := time.Now()
	rep, s := probe(t, client, m, nil)
	t.Logf("whole suite: %v", time.Since(start))

	if rep.Client != (ClientInfo{"probe-test-client", "1.2.3"}) || rep.ProtocolVersion != 1 {
		t.Errorf("client %+v, protocol %d", rep.Client, rep.ProtocolVersion)
	}
	all := Cases()
	if len(rep.Cases) != len(all) {
		t.Fatalf("%d cases reported, want %d", len(rep.Cases), len(all))
	}
	checkSummary(t, rep)
	checkCaseResults(t, rep, all)
	tr := client.transcript()
	checkCaseToolCalls(t, tr, rep, all)
	checkFinalMessage(t, tr, all)
	if live := m.Terminals(s.sid); len(live) != 0 {
		t.Errorf("%d terminals left unreleased: %+v", len(live), live)
	}
	checkNoFIFOs(t, s.cwd)
}

// checkCaseResults checks that each case passed, or for an informational
// one, saw what acpterm's runtime is documented to do.
func checkCaseResults(t *testing.T, rep *Report, all []Case) {
	t.Helper()
	for i, c := range rep.Cases {
		if c.ID != all[i].ID || c.Title != all[i].Title || c.Rule != all[i].Rule || c.Normative != all[i].Normative {
			t.Errorf("case %d is %+v, want %+v", i, c, all[i])
		}
		want := ResultPass
		if !c.Normative {
			want = ResultInfo
		}
		if c.Result != want {
			t.Errorf("%s: %s (%s), want %s", c.ID, c.Result, c.Observed, want)
		}
	}

	// What the runtime does where the protocol leaves a choice.
	observed := map[string]string{
		"shell-line":            "run by a shell",
		"signal-name-posix":     `POSIX name: "SIGTERM"`,
		"signal-exit-code-null": "exitCode null",
		"wait-cancel":           "answered the cancelled wait with -32800; the command kept running",
		"release-resolves-wait": `answered with signal "SIGTERM"`,
		"kill-process-group":    "died with it",
		"env-defaults":          "all set",
		"cwd-default":           "ran in the session cwd",
		"cwd-relative":          "error -32602",
		"session-scoped-ids":    "the same as for an unknown id",
		"unknown-terminal-id":   "output → error -32602, wait_for_exit → error -32602, kill → error -32602, release → error -32602",
	}
	for _, c := range rep.Cases {
		if want, ok := observed[c.ID]; ok && !strings.Contains(c.Observed, want) {
			t.Errorf("%s: observed %q, want it to say %q", c.ID, c.Observed, want)
		}
	}
}

// checkCaseToolCalls checks that each case ran as one tool call, finished
// with the case's result as rawOutput, with its terminals embedded.
func checkCaseToolCalls(t *testing.T, tr transcript, rep *Report, all []Case) {
	t.Helper()
	// One tool call per case, finished with the case's result as rawOutput.
	if len(tr.calls) != len(all) {
		t.Fatalf("%d tool calls, want %d", len(tr.calls), len(all))
	}
	embedded := 0
	for i, call := range tr.calls {
		c := rep.Cases[i]
		if call.Title != "probe: "+c.Title || call.Kind != acp.ToolKindExecute || call.Status != acp.ToolCallStatusInProgress {
			t.Errorf("tool call %d: %q kind %q status %q", i, call.Title, call.Kind, call.Status)
		}
		ups := tr.updates[call.ToolCallID]
		if len(ups) == 0 {
			t.Errorf("%s: no tool_call_update", c.ID)
			continue
		}
		for _, u := range ups {
			for _, content := range u.Content {
				if _, ok := content.(*acp.Terminal); ok {
					embedded++
				}
			}
		}
		last := ups[len(ups)-1]
		if last.Status == nil || *last.Status != acp.ToolCallStatusCompleted {
			t.Errorf("%s: final status %v", c.ID, last.Status)
		}
		var raw CaseResult
		if err := json.Unmarshal(last.RawOutput, &raw); err != nil || raw != c {
			t.Errorf("%s: rawOutput %s (%v), want %+v", c.ID, last.RawOutput, err, c)
		}
	}
	if embedded < len(all)-1 {
		t.Errorf("terminals embedded %d times for %d cases", embedded, len(all))
	}
}

// checkFinalMessage checks the one agent message, which names every case
// and the report's verdict and file.
func checkFinalMessage(t *testing.T, tr transcript, all []Case) {
	t.Helper()
	if len(tr.messages) != 1 {
		t.Fatalf("%d agent messages, want 1", len(tr.messages))
	}
	for _, c := range all {
		if !strings.Contains(tr.messages[0], c.ID) {
			t.Errorf("final message lacks %s:\n%s", c.ID, tr.messages[0])
		}
	}
	if !strings.Contains(tr.messages[0], "passes every normative case") || !strings.Contains(tr.messages[0], "JSON report written to") {
		t.Errorf("final message:\n%s", tr.messages[0])
	}
}

func TestClientWithoutTerminals(t *testing.T) {
	t.Parallel()
	client := &recorder{}
	rep, _ := probe(t, client, nil, nil)
	checkSummary(t, rep)
	if rep.Summary.Skip != len(Cases()) || len(rep.Cases) != len(Cases()) {
		t.Fatalf("summary %+v", rep.Summary)
	}
	for _, c := range rep.Cases {
		if !strings.Contains(c.Observed, "clientCapabilities.terminal") {
			t.Errorf("%s: %q", c.ID, c.Observed)
		}
	}
	tr := client.transcript()
	if len(tr.calls) != 0 || len(tr.messages) != 1 || !strings.Contains(tr.messages[0], "does not advertise clientCapabilities.terminal") {
		t.Errorf("calls %d, messages %q", len(tr.calls), tr.messages)
	}
}

func TestCancelSkipsTheRest(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	// The first create waits for the cancel, which the client sends before
	// answering it: the agent then sees the cancel first.
	held := &heldCreate{TerminalHandler: m, let: make(chan struct{})}
	client := &termClient{TerminalHandler: held, recorder: &recorder{calls: make(chan *acp.ToolCall, 8)}}
	path := filepath.Join(t.TempDir(), "report.json")
	s := connect(t, client, m, &Options{JSONReport: path, Cases: []string{"concurrent-waits", "exit-code-nonzero"}})
	go func() {
		<-client.calls
		s.cc.Cancel(context.Background(), &acp.CancelNotification{SessionID: s.sid})
		close(held.let)
	}()
	start := time.Now()
	if stop := s.prompt(t); stop != acp.StopReasonCancelled {
		t.Fatalf("stop reason %q", stop)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
	rep := readReport(t, path)
	checkSummary(t, rep)
	if len(rep.Cases) != 2 || rep.Cases[0].Result != ResultSkip || rep.Cases[1].Result != ResultSkip {
		t.Fatalf("cases %+v", rep.Cases)
	}
	if !strings.Contains(rep.Cases[0].Observed, "cancelled while the case ran") || !strings.Contains(rep.Cases[1].Observed, "cancelled before") {
		t.Errorf("observed %q, %q", rep.Cases[0].Observed, rep.Cases[1].Observed)
	}
	if live := m.Terminals(s.sid); len(live) != 0 {
		t.Errorf("terminals left after cancel: %+v", live)
	}
	checkNoFIFOs(t, s.cwd)
	tr := client.transcript()
	if len(tr.calls) != 1 {
		t.Errorf("%d tool calls, want 1", len(tr.calls))
	}
	if ups := tr.updates[tr.calls[0].ToolCallID]; len(ups) == 0 || *ups[len(ups)-1].Status != acp.ToolCallStatusFailed {
		t.Errorf("cancelled case's updates: %+v", ups)
	}
}

func TestBusySessionAndUnknownSession(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	// The run stays under way, in its first create, until let is closed.
	held := &heldCreate{TerminalHandler: m, let: make(chan struct{})}
	client := &termClient{TerminalHandler: held, recorder: &recorder{calls: make(chan *acp.ToolCall, 8)}}
	s := connect(t, client, m, &Options{Cases: []string{"concurrent-waits"}})
	ctx := context.Background()
	first := make(chan acp.StopReason, 1)
	go func() {
		resp, err := s.cc.Prompt(ctx, &acp.PromptRequest{SessionID: s.sid, Prompt: []acp.ContentBlock{&acp.TextContent{Text: "go"}}})
		if err != nil {
			t.Error(err)
			first <- ""
			return
		}
		first <- resp.StopReason
	}()
	<-client.calls // the first run is under way
	_, err := s.cc.Prompt(ctx, &acp.PromptRequest{SessionID: s.sid, Prompt: []acp.ContentBlock{&acp.TextContent{Text: "again"}}})
	if acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("second prompt on a busy session: %v", err)
	}
	_, err = s.cc.Prompt(ctx, &acp.PromptRequest{SessionID: "sess_nope", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "x"}}})
	if acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("unknown session: %v", err)
	}
	if _, err := s.cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "relative"}); acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("relative cwd: %v", err)
	}
	close(held.let)
	if stop := <-first; stop != acp.StopReasonEndTurn {
		t.Errorf("first prompt: %q", stop)
	}
}

func TestUnknownCaseID(t *testing.T) {
	err := Serve(context.Background(), strings.NewReader(""), io.Discard, &Options{Cases: []string{"exit-code-nonzero", "no-such-case"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-case") || strings.Contains(err.Error(), "exit-code-nonzero") {
		t.Errorf("err = %v", err)
	}
}

func TestCasesTable(t *testing.T) {
	seen := map[string]bool{}
	informational := false
	for _, c := range Cases() {
		if seen[c.ID] {
			t.Errorf("duplicate id %s", c.ID)
		}
		seen[c.ID] = true
		if c.ID != strings.ToLower(c.ID) || strings.ContainsAny(c.ID, " _") || c.Title == "" || c.Rule == "" {
			t.Errorf("bad case %+v", c)
		}
		if !c.Normative {
			informational = true
		} else if informational {
			t.Errorf("normative %s after informational cases", c.ID)
		}
	}
	full := utf8Text()
	if n := utf8Limit(full); n < 100 || n > len(full) || isRuneStart(full[len(full)-n]) {
		t.Errorf("utf8Limit %d does not cut inside a character", n)
	}
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
