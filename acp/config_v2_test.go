package acp_test

import (
	"context"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// configAgent is a v1 agent with one config option, which it lists in
// session/new, in its answer to session/set_config_option and in a
// config_option_update during a turn.
type configAgent struct {
	*bothAgent
	value string
}

func (a *configAgent) options() []acp.SessionConfigOption {
	cat := acp.SessionConfigOptionCategoryModel
	return []acp.SessionConfigOption{{ID: "model", Name: "Model", Category: &cat, Kind: &acp.SessionConfigSelect{
		CurrentValue: acp.SessionConfigValueID(a.value),
		Options:      acp.SessionConfigSelectOptionList{{Value: "big", Name: "Big"}, {Value: "small", Name: "Small"}},
	}}}
}

func (a *configAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s1", ConfigOptions: a.options()}, nil
}

func (a *configAgent) SetSessionConfigOption(_ context.Context, req *acp.SetSessionConfigOptionRequest) (*acp.SetSessionConfigOptionResponse, error) {
	if req.ConfigID == "model" {
		if v, ok := req.Value.(*acp.SessionConfigSelectValue); ok {
			a.value = string(v.Value)
		}
	}
	return &acp.SetSessionConfigOptionResponse{ConfigOptions: a.options()}, nil
}

func (a *configAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.ConfigOptionUpdate{ConfigOptions: a.options()}})
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
}

// A config option's ID is "id" in v1 and "configId" in v2: a v1 agent's
// options reach a v1 client across v2 with their IDs, in session/new's
// answer, set_config_option's, and a config_option_update.
func TestV2ConfigOptionIDs(t *testing.T) {
	rec := &v1Recorder{}
	agent := &configAgent{bothAgent: newBothAgent(), value: "big"}
	cc, _ := v2Pair(t, agent, rec, &acp.ConnOptions{OfferV2: true})
	ctx := ctxFor(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ns, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.ConfigOptions) != 1 || ns.ConfigOptions[0].ID != "model" {
		t.Fatalf("session/new's config options: %+v", ns.ConfigOptions)
	}
	set, err := cc.SetSessionConfigOption(ctx, &acp.SetSessionConfigOptionRequest{SessionID: "s1", ConfigID: "model",
		Value: &acp.SessionConfigSelectValue{Value: "small"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.ConfigOptions) != 1 || set.ConfigOptions[0].ID != "model" || agent.value != "small" {
		t.Fatalf("set_config_option: options %+v, the agent's value %q", set.ConfigOptions, agent.value)
	}
	if _, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var u *acp.ConfigOptionUpdate
	for _, x := range rec.updates {
		if c, ok := x.(*acp.ConfigOptionUpdate); ok {
			u = c
		}
	}
	if u == nil || len(u.ConfigOptions) != 1 || u.ConfigOptions[0].ID != "model" {
		t.Fatalf("config_option_update: %+v (updates %v)", u, rec.updates)
	}
}

// On the wire, v2's config options carry configId: a v2 agent's answer is
// read with its IDs.
func TestV2ConfigOptionIDsFromTheWire(t *testing.T) {
	cc, _ := v2Agent(t, &v1Recorder{}, nil, func(method, id string) []string {
		if method == "session/set_config_option" {
			return []string{result(id, `{"configOptions":[{"configId":"mode","name":"Mode","category":"mode","type":"select","currentValue":"auto","options":[{"value":"auto","name":"Auto"}]}]}`)}
		}
		return nil
	})
	set, err := cc.SetSessionConfigOption(ctxFor(t), &acp.SetSessionConfigOptionRequest{SessionID: "s1", ConfigID: "mode",
		Value: &acp.SessionConfigSelectValue{Value: "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.ConfigOptions) != 1 || set.ConfigOptions[0].ID != "mode" {
		t.Fatalf("config options %+v: want the option mode", set.ConfigOptions)
	}
}
