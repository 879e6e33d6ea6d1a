package acp_test

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

	"github.com/acpterm/acpterm/acp"
)

// bothAgent is an agent written once against the v1 types. Its turn says hello, runs a tool
// call that asks for permission, and leaves a terminal running in the background, cancellable;
// the prompt "fail" fails the turn, "wait" waits for the client to cancel it.
type bothAgent struct {
	conn     *acp.AgentConn
	stopped  chan struct{} // closed by the terminal's stop function
	stopOnce sync.Once
	exited   chan struct{} // closed once the terminal's exit has been reported
	history  []acp.SessionUpdate
}

func newBothAgent() *bothAgent {
	return &bothAgent{stopped: make(chan struct{}), exited: make(chan struct{})}
}

func (a *bothAgent) SetConn(c *acp.AgentConn) { a.conn = c }

func (a *bothAgent) Initialize(context.Context, *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "both", Version: "1"}}, nil
}

func (a *bothAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s1"}, nil
}

func (a *bothAgent) LoadSession(ctx context.Context, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	for _, u := range a.history {
		if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: u}); err != nil {
			return nil, err
		}
	}
	return &acp.LoadSessionResponse{}, nil
}

func text(p []acp.ContentBlock) string {
	if len(p) > 0 {
		if t, ok := p[0].(*acp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

func (a *bothAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	send := func(u acp.SessionUpdate) error {
		a.history = append(a.history, u)
		return a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: u})
	}
	switch text(req.Prompt) {
	case "fail":
		return nil, errors.New("the model is gone")
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := send(&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "hello"}}); err != nil {
		return nil, err
	}
	if err := send(&acp.ToolCall{ToolCallID: "t1", Title: "make", Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusPending}); err != nil {
		return nil, err
	}
	title := "make"
	perm, err := a.conn.RequestPermission(ctx, &acp.RequestPermissionRequest{
		SessionID: req.SessionID,
		ToolCall:  acp.ToolCallUpdate{ToolCallID: "t1", Title: &title},
		Options:   []acp.PermissionOption{{OptionID: "ok", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}},
	})
	if err != nil {
		return nil, err
	}
	if o, ok := perm.Outcome.(*acp.SelectedPermissionOutcome); !ok || o.OptionID != "ok" {
		return nil, errors.New("not allowed")
	}
	// A display terminal that outlives the turn.
	if err := a.conn.CancellableTerminal(ctx, req.SessionID, "term1", func() {
		a.stopOnce.Do(func() { close(a.stopped) })
	}); err != nil {
		return nil, err
	}
	cmd := "make"
	tu, err := (&acp.V2TerminalUpdate{TerminalID: "term1", Command: &cmd}).SessionUpdate()
	if err != nil {
		return nil, err
	}
	if err := send(tu); err != nil {
		return nil, err
	}
	status := acp.ToolCallStatusCompleted
	if err := send(&acp.ToolCallUpdate{ToolCallID: "t1", Status: &status, Content: []acp.ToolCallContent{&acp.Terminal{TerminalID: "term1"}}}); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// finishTerminal reports the terminal's exit once it has been stopped; the test joins it.
func (a *bothAgent) finishTerminal(ctx context.Context) error {
	defer close(a.exited)
	select {
	case <-a.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	code := int64(143)
	tu, err := (&acp.V2TerminalUpdate{TerminalID: "term1", ExitStatus: &acp.V2TerminalExitStatus{ExitCode: &code}}).SessionUpdate()
	if err != nil {
		return err
	}
	return a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: "s1", Update: tu})
}

func TestGoAgentServesV2(t *testing.T) {
	agent := newBothAgent()
	rec := &v2Recorder{}
	cc, ac := v2Pair(t, agent, rec, &acp.ConnOptions{OfferV2: true})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ac.ProtocolVersion() != 2 {
		t.Fatalf("agent negotiated %d", ac.ProtocolVersion())
	}
	sess, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: sess.SessionID, Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("stop reason %q", resp.StopReason)
	}
	v := cc.View("s1")
	if msgs := v.Messages(); len(msgs) != 1 || msgs[0].Kind != "agent_message" || msgs[0].ID == "" {
		t.Errorf("messages %+v: the SDK gives chunks without an id one per turn", msgs)
	}
	tc := v.ToolCall("t1")
	if tc == nil || tc.Title == nil || *tc.Title != "make" || tc.Status == nil || *tc.Status != acp.V2ToolCallStatusCompleted || len(tc.Content) != 1 {
		t.Errorf("tool call %+v", tc)
	}
	items, reported := v.Background()
	if !reported || len(items) != 1 || items[0].Terminal == nil || items[0].Terminal.TerminalID != "term1" || !items[0].Cancellable {
		t.Fatalf("background %+v (reported %v): want the running terminal, cancellable", items, reported)
	}
	// The permission request showed the session requiring action, then running again.
	var states []string
	rec.mu.Lock()
	for _, u := range rec.got {
		if su, ok := u.(*acp.V2StateUpdate); ok {
			switch su.State.(type) {
			case *acp.V2RunningStateUpdate:
				states = append(states, "running")
			case *acp.V2RequiresActionStateUpdate:
				states = append(states, "requires_action")
			case *acp.V2IdleStateUpdate:
				states = append(states, "idle")
			}
		}
	}
	rec.mu.Unlock()
	if got := joinS(states); got != "running requires_action running idle" {
		t.Errorf("states %s", got)
	}

	// Cancelling the background terminal: the answer means accepted, the exit comes as an update.
	finished := make(chan error, 1)
	go func() { finished <- agent.finishTerminal(ctx) }()
	if _, err := cc.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: "s1", TerminalID: "term1"}); err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	// The next turn's state updates no longer list it, and the exit is in the view.
	if _, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "again"}}}); err != nil {
		t.Fatal(err)
	}
	term := v.Terminal("term1")
	if term == nil || term.ExitStatus == nil || *term.ExitStatus.ExitCode != 143 {
		t.Errorf("terminal %+v", term)
	}
	if _, err := cc.CancelToolCall(ctx, &acp.V2CancelToolCallRequest{SessionID: "s1", ToolCallID: "t1"}); !errors.Is(err, acp.ErrNotCancellable) {
		t.Errorf("cancel of a tool call that does not advertise it: %v", err)
	}
}

func joinS(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestGoAgentV2TurnEnds(t *testing.T) {
	agent := newBothAgent()
	client := &stateClient{running: make(chan struct{}, 8)}
	cc, _ := v2Pair(t, agent, client, &acp.ConnOptions{OfferV2: true})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	t.Run("error", func(t *testing.T) {
		_, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "fail"}}})
		var pe *acp.PeerError
		if !errors.As(err, &pe) || pe.Err.Code != acp.CodeInternalError {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		pctx, cancel := context.WithCancel(ctx)
		type res struct {
			r   *acp.PromptResponse
			err error
		}
		done := make(chan res, 1)
		go func() {
			r, err := cc.Prompt(pctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "wait"}}})
			done <- res{r, err}
		}()
		// Cancel once the turn runs.
		for range 2 { // the error turn's running, then this one's
			select {
			case <-client.running:
			case r := <-done:
				t.Fatalf("Prompt returned early: %+v", r)
			}
		}
		cancel()
		r := <-done
		if r.err != nil || r.r.StopReason != acp.StopReasonCancelled {
			t.Fatalf("%+v", r)
		}
	})
}

// stateClient signals each running state update.
type stateClient struct {
	v1Recorder
	running chan struct{}
}

func (c *stateClient) SessionUpdateV2(_ context.Context, n *acp.V2UpdateSessionNotification) error {
	if su, ok := n.Update.(*acp.V2StateUpdate); ok {
		if _, ok := su.State.(*acp.V2RunningStateUpdate); ok {
			c.running <- struct{}{}
		}
	}
	return nil
}

// A v2 resume with replay goes through the agent's LoadSession, then a state update; the view is
// rebuilt from the replay.
func TestGoAgentV2ResumeReplays(t *testing.T) {
	agent := newBothAgent()
	agent.history = []acp.SessionUpdate{&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "earlier"}}}
	cc, _ := v2Pair(t, agent, &v1Recorder{}, &acp.ConnOptions{OfferV2: true})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.ResumeSessionV2(ctx, &acp.V2ResumeSessionRequest{SessionID: "s1", Cwd: "/w", ReplayFrom: &acp.V2ReplayFromStart{}}); err != nil {
		t.Fatal(err)
	}
	v := cc.View("s1")
	if msgs := v.Messages(); len(msgs) != 1 {
		t.Errorf("replayed messages %+v", msgs)
	}
	if _, ok := v.State().(*acp.V2IdleStateUpdate); !ok {
		t.Errorf("state after resume: %T", v.State())
	}
	if _, err := cc.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: "s1", Cwd: "/w"}); !errors.Is(err, acp.ErrNotInVersion) {
		t.Errorf("session/load in v2: %v", err)
	}
}

// The same agent, unchanged, serves a v1 client: the turn ends with the prompt's answer, and the
// v2-only registrations do nothing.
func TestGoAgentServesV1Too(t *testing.T) {
	agent := newBothAgent()
	rec := &v1Recorder{}
	cc, ac := v2Pair(t, agent, rec, nil)
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ac.ProtocolVersion() != 1 {
		t.Fatalf("agent negotiated %d", ac.ProtocolVersion())
	}
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	resp, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}})
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	if got, want := joinS(rec.kinds()), "agent_message_chunk tool_call terminal_update tool_call_update"; got != want {
		t.Errorf("updates %q, want %q", got, want)
	}
	if _, err := cc.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: "s1", TerminalID: "term1"}); !errors.Is(err, acp.ErrNotInVersion) {
		t.Errorf("terminal/cancel in v1: %v", err)
	}
}

// planAgent's turn sends a v1 plan.
type planAgent struct{ *bothAgent }

func (a *planAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	plan := &acp.Plan{Entries: []acp.PlanEntry{{Content: "build", Priority: acp.PlanEntryPriorityHigh, Status: acp.PlanEntryStatusInProgress}}}
	if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: plan}); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// A v1 plan crosses v2 as the session's one plan_update and reaches a v1 handler as a plan again.
func TestV2PlanBothWays(t *testing.T) {
	rec := &v1Recorder{}
	agent := &planAgent{newBothAgent()}
	cc, _ := v2Pair(t, agent, rec, &acp.ConnOptions{OfferV2: true})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "plan"}}}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.updates) != 1 {
		t.Fatalf("updates %v", rec.updates)
	}
	p, ok := rec.updates[0].(*acp.Plan)
	if !ok || len(p.Entries) != 1 || p.Entries[0].Content != "build" || p.Entries[0].Status != acp.PlanEntryStatusInProgress {
		t.Errorf("plan %#v", rec.updates[0])
	}
}

// v2Native sends v2 updates itself where the connection speaks v2.
type v2Native struct{ *bothAgent }

func (a *v2Native) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	n := &acp.V2UpdateSessionNotification{SessionID: req.SessionID, Update: &acp.V2AgentMessage{
		MessageID: "m-native", Content: []acp.V2ContentBlock{&acp.V2TextContent{Text: "native"}},
	}}
	if err := a.conn.SessionUpdateV2(ctx, n); err != nil && !errors.Is(err, acp.ErrNotInVersion) {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func TestAgentSessionUpdateV2(t *testing.T) {
	for _, offer := range []bool{false, true} {
		cc, _ := v2Pair(t, &v2Native{newBothAgent()}, &v1Recorder{}, &acp.ConnOptions{OfferV2: offer})
		ctx := ctxFor(t)
		if _, err := cc.Initialize(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "x"}}}); err != nil {
			t.Fatal(err)
		}
		msgs := cc.View("s1").Messages()
		if offer && (len(msgs) != 1 || msgs[0].ID != "m-native") {
			t.Errorf("v2: messages %+v", msgs)
		}
		if !offer && len(msgs) != 0 {
			t.Errorf("v1: a v2 update was sent: %+v", msgs)
		}
	}
}

// A resume that asks for a replay the agent cannot give is invalid params, as the schema asks.
func TestAgentV2ResumeWithoutReplay(t *testing.T) {
	cc, _ := v2Pair(t, namedAgent{}, &v1Recorder{}, &acp.ConnOptions{OfferV2: true})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := cc.ResumeSessionV2(ctx, &acp.V2ResumeSessionRequest{SessionID: "s", Cwd: "/w", ReplayFrom: &acp.V2ReplayFromStart{}})
	if !errors.Is(err, acp.ErrInvalidParams) {
		t.Errorf("err = %v", err)
	}
}

// toolJobAgent leaves a tool call working in the background, cancellable.
type toolJobAgent struct {
	*bothAgent
	stop chan struct{}
	once sync.Once
}

func (a *toolJobAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	tc := &acp.ToolCall{ToolCallID: "fetch", Title: "fetch the logs", Kind: acp.ToolKindFetch, Status: acp.ToolCallStatusInProgress}
	if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: tc}); err != nil {
		return nil, err
	}
	if err := a.conn.CancellableToolCall(ctx, req.SessionID, "fetch", func() { a.once.Do(func() { close(a.stop) }) }); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// work ends the tool call once cancelled, as the agent's own goroutine would.
func (a *toolJobAgent) work(ctx context.Context) error {
	select {
	case <-a.stop:
	case <-ctx.Done():
		return ctx.Err()
	}
	st := acp.ToolCallStatus("cancelled")
	return a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: "s1", Update: &acp.ToolCallUpdate{ToolCallID: "fetch", Status: &st}})
}

func TestGoAgentV2CancelToolCall(t *testing.T) {
	agent := &toolJobAgent{bothAgent: newBothAgent(), stop: make(chan struct{})}
	client := &listClient{listed: make(chan int, 8)}
	cc, _ := v2Pair(t, agent, client, &acp.ConnOptions{OfferV2: true})
	client.cc = cc
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "fetch"}}}); err != nil {
		t.Fatal(err)
	}
	items, _ := cc.View("s1").Background()
	if len(items) != 1 || items[0].ToolCall == nil || items[0].ToolCall.ToolCallID != "fetch" || !items[0].Cancellable {
		t.Fatalf("background %+v", items)
	}
	// The turn's state updates were handled before Prompt returned.
	for len(client.listed) > 0 {
		<-client.listed
	}
	worked := make(chan error, 1)
	go func() { worked <- agent.work(ctx) }()
	if _, err := cc.CancelToolCall(ctx, &acp.V2CancelToolCallRequest{SessionID: "s1", ToolCallID: "fetch"}); err != nil {
		t.Fatal(err)
	}
	if err := <-worked; err != nil {
		t.Fatal(err)
	}
	// The final status ends the background work; the state update that says so follows at once.
	for n := range client.listed {
		if n == 0 {
			break
		}
	}
	tc := cc.View("s1").ToolCall("fetch")
	if tc.Status == nil || *tc.Status != acp.V2ToolCallStatusCancelled || (tc.Capabilities != nil && tc.Capabilities.Cancel != nil) {
		t.Errorf("tool call after cancel %+v", tc)
	}
}

// listClient reports the length of the background list of every state update.
type listClient struct {
	v1Recorder
	cc     *acp.ClientConn
	listed chan int
}

func (c *listClient) SessionUpdateV2(_ context.Context, n *acp.V2UpdateSessionNotification) error {
	if _, ok := n.Update.(*acp.V2StateUpdate); ok {
		items, _ := c.cc.View(n.SessionID).Background()
		c.listed <- len(items)
	}
	return nil
}

// elicitAgent's turn asks the client for a form (v1 types), and says what came back.
type elicitAgent struct {
	*bothAgent
	asked *acp.CreateElicitationRequest
}

func (a *elicitAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	resp, err := a.conn.CreateElicitation(ctx, a.asked)
	if err != nil {
		return nil, err
	}
	if r, ok := resp.Action.(*acp.ElicitationAcceptAction); !ok || len(r.Content) == 0 {
		return nil, errors.New("not accepted")
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// elicitClient answers a form with the values of the golden file.
type elicitClient struct {
	v1Recorder
	got    *acp.CreateElicitationRequest
	answer *acp.CreateElicitationResponse
}

func (c *elicitClient) CreateElicitation(_ context.Context, req *acp.CreateElicitationRequest) (*acp.CreateElicitationResponse, error) {
	c.got = req
	return c.answer, nil
}

func (c *elicitClient) CompleteElicitation(context.Context, *acp.CompleteElicitationNotification) error {
	return nil
}

// A form elicitation crosses v2 and back in v1's words on both sides.
func TestV2ElicitationBothWays(t *testing.T) {
	var asked acp.CreateElicitationRequest
	var answer acp.CreateElicitationResponse
	for file, v := range map[string]any{"CreateElicitationRequest.json": &asked, "CreateElicitationResponse.json": &answer} {
		b, err := os.ReadFile(filepath.Join("testdata", "golden", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	client := &elicitClient{answer: &answer}
	cc, _ := v2Pair(t, &elicitAgent{bothAgent: newBothAgent(), asked: &asked}, client, &acp.ConnOptions{OfferV2: true})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, &acp.InitializeRequest{ClientCapabilities: &acp.ClientCapabilities{
		Elicitation: &acp.ElicitationCapabilities{Form: &acp.ElicitationFormCapabilities{}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "ask"}}}); err != nil {
		t.Fatal(err)
	}
	if client.got == nil || client.got.Message != asked.Message {
		t.Fatalf("the client got %+v", client.got)
	}
	want, _ := json.Marshal(&asked)
	got, _ := json.Marshal(client.got)
	if string(want) != string(got) {
		t.Errorf("the form changed on the way:\n  sent %s\n  got  %s", want, got)
	}
}

// A client that ends its input right after a v2 prompt: the turn, which goes on after its
// acknowledgement, is waited for at the end of input (DrainTimeout), and its idle state update
// is written before the agent's output ends.
func TestGoAgentV2DrainsTurns(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	agent := &slowAgent{bothAgent: newBothAgent(), release: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- acp.ServeAgent(context.Background(), agent, inR, outW, nil) }()
	lines := bufio.NewScanner(outR)
	var out []string
	send := func(req string, answer string) {
		t.Helper()
		if _, err := io.WriteString(inW, req+"\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			out = append(out, lines.Text())
			if strings.Contains(lines.Text(), answer) {
				return
			}
		}
		t.Fatalf("no %s in %q", answer, out)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}`, `"id":1,"result"`)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w"}}`, `"id":2,"result"`)
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"slow"}]}}`, `"id":3,"result"`)
	inW.Close() // the end of input, with the turn still running
	close(agent.release)
	read := make(chan struct{})
	go func() {
		// Read to the end, so that the agent's writes never wait for us.
		defer close(read)
		for lines.Scan() {
			out = append(out, lines.Text())
		}
	}()
	err := <-served
	outW.Close()
	<-read
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(out, "\n")
	if !strings.Contains(all, "slow but done") || !strings.Contains(all, `"state":"idle","stopReason":"end_turn"`) {
		t.Errorf("output:\n%s", all)
	}
}

// slowAgent's turn waits until its acknowledgement has been written, well after the end of
// input has been read.
type slowAgent struct {
	*bothAgent
	release chan struct{}
}

func (a *slowAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	select {
	case <-a.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	say := &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "slow but done"}}
	if err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: say}); err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
