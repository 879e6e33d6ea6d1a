package acp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
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
	checkFirstV2Turn(t, v)
	// The permission request showed the session requiring action, then running again.
	if got := joinS(rec.states()); got != "running requires_action running idle" {
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

// checkFirstV2Turn checks the view after bothAgent's first turn: one
// message, the completed tool call, and its terminal running in the
// background, cancellable.
func checkFirstV2Turn(t *testing.T, v *acp.SessionView) {
	t.Helper()
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
}

// states names the session states the recorder heard, in order.
func (r *v2Recorder) states() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var states []string
	for _, u := range r.got {
		su, ok := u.(*acp.V2StateUpdate)
		if !ok {
			continue
		}
		switch su.State.(type) {
		case *acp.V2RunningStateUpdate:
			states = append(states, "running")
		case *acp.V2RequiresActionStateUpdate:
			states = append(states, "requires_action")
		case *acp.V2IdleStateUpdate:
			states = append(states, "idle")
		}
	}
	return states
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
