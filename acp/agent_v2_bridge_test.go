package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

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
