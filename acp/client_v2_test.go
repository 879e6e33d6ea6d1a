package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

const v2InitAnswer = `"result":{"protocolVersion":2,"info":{"name":"scripted","version":"1"},"capabilities":{"session":{}},"authMethods":[{"type":"agent","methodId":"oauth","name":"Log in"}]}`

func update(u string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + u + `}}`
}

func result(id, r string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":` + r + `}` }

// v2Agent is a scripted v2 agent: initialize and session/new are answered, session/prompt with
// the lines turn gives, anything else with {} (or nothing, for notifications) after onOther.
func v2Agent(t *testing.T, client acp.Client, turn func(id string) []string, onOther func(method, id string) []string) (*acp.ClientConn, *scripted) {
	t.Helper()
	cc, s := clientWith(t, client, &acp.ConnOptions{OfferV2: true}, func(r io.Reader, w io.WriteCloser) *scripted {
		return newReactor(t, r, w, func(method, id string, params json.RawMessage) []string {
			switch method {
			case "initialize":
				return []string{`{"jsonrpc":"2.0","id":` + id + `,` + v2InitAnswer + `}`}
			case "session/new":
				return []string{result(id, `{"sessionId":"s1"}`)}
			case "session/prompt":
				return turn(id)
			}
			if onOther != nil {
				if out := onOther(method, id); out != nil {
					return out
				}
			}
			if id != "" {
				return []string{result(id, `{}`)}
			}
			return nil
		})
	})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if cc.ProtocolVersion() != acp.ProtocolVersion2 {
		t.Fatalf("negotiated %d", cc.ProtocolVersion())
	}
	if _, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	return cc, s
}

// v1Recorder is a Client with only v1 handlers; it records the updates it was given.
type v1Recorder struct {
	mu      sync.Mutex
	updates []acp.SessionUpdate
}

func (r *v1Recorder) RequestPermission(_ context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.SelectedPermissionOutcome{OptionID: req.Options[0].OptionID}}, nil
}

func (r *v1Recorder) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, n.Update)
	return nil
}

func (r *v1Recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.updates {
		b, _ := json.Marshal(&acp.SessionNotification{SessionID: "s", Update: u})
		var m struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
			} `json:"update"`
		}
		_ = json.Unmarshal(b, &m)
		out = append(out, m.Update.SessionUpdate)
	}
	return out
}

// A turn: Prompt waits past the acknowledgement for the idle state update, the view merges the
// upserts, background work is listed and cancellable, and a v1 handler hears it in v1's words.
func TestClientV2Turn(t *testing.T) {
	rec := &v1Recorder{}
	cc, s := v2Agent(t, rec, func(id string) []string {
		return []string{
			update(`{"sessionUpdate":"state_update","state":"running"}`),
			update(`{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"make","kind":"execute","status":"in_progress"}`),
			update(`{"sessionUpdate":"terminal_update","terminalId":"term1","command":"make","capabilities":{"cancel":{}}}`),
			update(`{"sessionUpdate":"terminal_output_chunk","terminalId":"term1","data":"aGVs"}`),
			update(`{"sessionUpdate":"terminal_output_chunk","terminalId":"term1","data":"bG8="}`),
			update(`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","title":null}`),
			update(`{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"Hel"}}`),
			result(id, `{"messageId":"m1"}`),
			update(`{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"lo"}}`),
			update(`{"sessionUpdate":"usage_update","used":1200,"size":200000}`),
			update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","background":[{"type":"terminal","terminalId":"term1"}]}`),
		}
	}, nil)
	ctx := ctxFor(t)
	resp, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("stop reason %q", resp.StopReason)
	}
	// Every update the agent sent before the idle one has been applied.
	checkTurnView(t, cc.View("s1"))
	if _, err := cc.CancelTerminal(ctx, &acp.V2CancelTerminalRequest{SessionID: "s1", TerminalID: "term1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.CancelToolCall(ctx, &acp.V2CancelToolCallRequest{SessionID: "s1", ToolCallID: "t1"}); !errors.Is(err, acp.ErrNotCancellable) {
		t.Errorf("cancel of a tool call without capabilities.cancel: %v", err)
	}
	if m := s.methods(); m[len(m)-1] != "terminal/cancel" {
		t.Errorf("methods sent %v: want terminal/cancel last and no tool_call/cancel", m)
	}
	// The v1 handler: the tool call announced as tool_call, then updated; chunks as chunks; the
	// terminal updates as the unknown updates package display reads; no state update.
	want := "tool_call terminal_update terminal_output_chunk terminal_output_chunk tool_call_update agent_message_chunk agent_message_chunk usage_update"
	if got := strings.Join(rec.kinds(), " "); got != want {
		t.Errorf("v1 handler got\n  %s\nwant\n  %s", got, want)
	}
}

// checkTurnView checks the view after TestClientV2Turn's turn: the
// upserts merged, the terminal's output, the background terminal
// cancellable, the idle state and the usage.
func checkTurnView(t *testing.T, v *acp.SessionView) {
	t.Helper()
	msgs := v.Messages()
	if len(msgs) != 1 || len(msgs[0].Content) != 2 || msgs[0].Kind != "agent_message" {
		t.Fatalf("messages %+v", msgs)
	}
	tc := v.ToolCall("t1")
	if tc == nil || tc.Title != nil || tc.Status == nil || *tc.Status != acp.V2ToolCallStatusCompleted || tc.Kind == nil {
		t.Errorf("tool call %+v: want status completed, title cleared by null, kind kept", tc)
	}
	if got := string(v.TerminalOutput("term1")); got != "hello" {
		t.Errorf("terminal output %q", got)
	}
	items, reported := v.Background()
	if !reported || len(items) != 1 || items[0].Terminal == nil || items[0].Terminal.Command == nil || *items[0].Terminal.Command != "make" || !items[0].Cancellable {
		t.Fatalf("background %+v (reported %v)", items, reported)
	}
	if _, ok := v.State().(*acp.V2IdleStateUpdate); !ok {
		t.Errorf("state %T", v.State())
	}
	if u := v.Usage(); u == nil || u.Used != 1200 || u.Size != 200000 {
		t.Errorf("usage %+v", u)
	}
}

// An idle state update with stop reason "error" ends Prompt with the agent's error, as a v1
// agent's failed session/prompt does.
func TestClientV2TurnError(t *testing.T) {
	cc, _ := v2Agent(t, &v1Recorder{}, func(id string) []string {
		return []string{
			result(id, `{"messageId":"m1"}`),
			update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{"code":-32000,"message":"log in first"}}`),
		}
	}, nil)
	_, err := cc.Prompt(ctxFor(t), &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}})
	var pe *acp.PeerError
	if !errors.As(err, &pe) || pe.Err.Code != acp.CodeAuthRequired || pe.Err.Message != "log in first" {
		t.Fatalf("err = %v", err)
	}
}

// An idle snapshot before the turn started (a repeat of the last one) does not end the Prompt.
func TestClientV2StaleIdle(t *testing.T) {
	cc, _ := v2Agent(t, &v1Recorder{}, func(id string) []string {
		return []string{
			update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"refusal"}`),
			update(`{"sessionUpdate":"state_update","state":"running"}`),
			update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"max_tokens"}`),
			result(id, `{"messageId":"m1"}`),
		}
	}, nil)
	resp, err := cc.Prompt(ctxFor(t), &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}})
	if err != nil || resp.StopReason != acp.StopReasonMaxTokens {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
}

// Cancelling Prompt's ctx after the acknowledgement sends session/cancel and returns the turn's
// end the agent reports.
func TestClientV2PromptCancel(t *testing.T) {
	acked := make(chan struct{})
	cc, s := v2Agent(t, &v1Recorder{}, func(id string) []string {
		defer close(acked)
		return []string{update(`{"sessionUpdate":"state_update","state":"running"}`), result(id, `{"messageId":"m1"}`)}
	}, func(method, id string) []string {
		if method == "session/cancel" {
			return []string{update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}`)}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(ctxFor(t))
	done := make(chan struct{})
	var resp *acp.PromptResponse
	var err error
	go func() {
		defer close(done)
		resp, err = cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}})
	}()
	<-acked
	cancel()
	<-done
	if err != nil || resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	if m := s.methods(); m[len(m)-1] != "session/cancel" {
		t.Errorf("methods %v", m)
	}
}

// v2Recorder takes v2 values as they are.
type v2Recorder struct {
	v1Recorder
	mu   sync.Mutex
	got  []acp.V2SessionUpdate
	raws []string
}

func (r *v2Recorder) SessionUpdateV2(ctx context.Context, n *acp.V2UpdateSessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n.Update)
	r.raws = append(r.raws, string(acp.RawParams(ctx)))
	return nil
}

func (r *v2Recorder) RequestPermissionV2(_ context.Context, req *acp.V2RequestPermissionRequest) (*acp.V2RequestPermissionResponse, error) {
	return &acp.V2RequestPermissionResponse{Outcome: &acp.SelectedPermissionOutcome{OptionID: req.Options[len(req.Options)-1].OptionID}}, nil
}

// Permission requests reach RequestPermission in v1's words, or RequestPermissionV2 as they are.
func TestClientV2PermissionAnswers(t *testing.T) {
	perm := `{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","title":"Run make?","subject":{"type":"command","command":"make","cwd":"/w","toolCallId":"t9"},"options":[{"optionId":"y","name":"Yes","kind":"allow_once"},{"optionId":"n","name":"No","kind":"reject_once"}]}}`
	for _, tc := range []struct {
		name   string
		client acp.Client
		want   string
	}{
		{"v1 handlers", &v1Recorder{}, `"outcome":{"optionId":"y","outcome":"selected"}`},
		{"v2 handlers", &v2Recorder{}, `"outcome":{"optionId":"n","outcome":"selected"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var promptID string
			cc, s := v2Agent(t, tc.client, func(id string) []string {
				promptID = id
				return []string{perm}
			}, func(method, id string) []string {
				if method == "" && id == `"p1"` {
					return []string{result(promptID, `{"messageId":"m1"}`), update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`)}
				}
				return nil
			})
			if _, err := cc.Prompt(ctxFor(t), &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}}); err != nil {
				t.Fatalf("%v; the agent read %v", err, s.methods())
			}
			var answer string
			for i, m := range s.methods() {
				if m == "" {
					answer = string(mustJSON(t, s.params(i)))
				}
			}
			if !strings.Contains(answer, tc.want) {
				t.Errorf("answer %s, want %s", answer, tc.want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Message upserts: content replaces as a whole, a chunk appends, null clears; a V2UpdateHandler
// sees the view with the update applied and the params as sent.
func TestClientV2MessageUpserts(t *testing.T) {
	rec := &viewChecker{}
	cc, _ := v2Agent(t, rec, func(id string) []string {
		return []string{
			result(id, `{"messageId":"m1"}`),
			update(`{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}`),
			update(`{"sessionUpdate":"agent_message","messageId":"m2","content":[{"type":"text","text":"draft"}]}`),
			update(`{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":" more"}}`),
			update(`{"sessionUpdate":"agent_message","messageId":"m2","content":[{"type":"text","text":"final"}]}`),
			update(`{"sessionUpdate":"agent_thought","messageId":"m3","content":[{"type":"text","text":"hmm"}]}`),
			update(`{"sessionUpdate":"agent_thought","messageId":"m3","content":null}`),
			update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`),
		}
	}, nil)
	rec.cc = cc
	if _, err := cc.Prompt(ctxFor(t), &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	text := func(m acp.ViewMessage) string {
		var s []string
		for _, b := range m.Content {
			if x, ok := b.(*acp.V2TextContent); ok {
				s = append(s, x.Text)
			}
		}
		return m.Kind + ":" + strings.Join(s, "|")
	}
	var got []string
	for _, m := range cc.View("s1").Messages() {
		got = append(got, text(m))
	}
	if want := "user_message:hi agent_message:final agent_thought:"; strings.Join(got, " ") != want {
		t.Errorf("messages %q, want %q", strings.Join(got, " "), want)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := []string{"hi", "draft", "draft| more", "final", "hmm", "", ""}; strings.Join(rec.lastAgentText, ",") != strings.Join(want, ",") {
		t.Errorf("the view as each update was handled: %q, want %q", rec.lastAgentText, want)
	}
	if len(rec.raws) == 0 || !strings.Contains(rec.raws[0], `"user_message"`) {
		t.Errorf("RawParams %q", rec.raws)
	}
}

// viewChecker records, for each update, the text of the newest message in the view.
type viewChecker struct {
	v1Recorder
	cc            *acp.ClientConn
	mu            sync.Mutex
	lastAgentText []string
	raws          []string
}

func (r *viewChecker) SessionUpdateV2(ctx context.Context, n *acp.V2UpdateSessionNotification) error {
	msgs := r.cc.View(n.SessionID).Messages()
	var s []string
	if len(msgs) > 0 {
		for _, b := range msgs[len(msgs)-1].Content {
			if x, ok := b.(*acp.V2TextContent); ok {
				s = append(s, x.Text)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastAgentText = append(r.lastAgentText, strings.Join(s, "|"))
	r.raws = append(r.raws, string(acp.RawParams(ctx)))
	return nil
}

// stateRecorder is a v1Recorder that also takes v2's state updates (V2StateHandler): what the
// background list was, as the view had it, each time.
type stateRecorder struct {
	v1Recorder
	cc     func() *acp.ClientConn
	states []string
}

func (r *stateRecorder) SessionStateV2(_ context.Context, sid acp.SessionID, u *acp.V2StateUpdate) error {
	items, reported := r.cc().View(sid).Background()
	var ids []string
	for _, it := range items {
		if it.Terminal != nil {
			ids = append(ids, string(it.Terminal.TerminalID))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kind := fmt.Sprintf("%T", u.State)
	r.states = append(r.states, fmt.Sprintf("%s %v %v", strings.TrimPrefix(kind, "*acp.V2"), reported, ids))
	r.updates = append(r.updates, nil) // its place among the v1 updates
	return nil
}

// A v1 client with V2StateHandler hears the state updates in order with the translated ones, the
// view already holding each, and before Prompt returns.
func TestClientV2StateHandler(t *testing.T) {
	rec := &stateRecorder{}
	var conn *acp.ClientConn
	rec.cc = func() *acp.ClientConn { return conn }
	cc, _ := v2Agent(t, rec, func(id string) []string {
		return []string{
			update(`{"sessionUpdate":"state_update","state":"running"}`),
			update(`{"sessionUpdate":"terminal_update","terminalId":"term1","command":"make","capabilities":{"cancel":{}}}`),
			result(id, `{"messageId":"m1"}`),
			update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","background":[{"type":"terminal","terminalId":"term1"}]}`),
		}
	}, nil)
	conn = cc
	if _, err := cc.Prompt(ctxFor(t), &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []string{"RunningStateUpdate false []", "IdleStateUpdate true [term1]"}
	if fmt.Sprint(rec.states) != fmt.Sprint(want) {
		t.Errorf("states %q, want %q", rec.states, want)
	}
	if len(rec.updates) != 3 || rec.updates[0] != nil || rec.updates[1] == nil || rec.updates[2] != nil {
		t.Errorf("updates %v: want state, terminal_update, state", rec.updates)
	}
}
