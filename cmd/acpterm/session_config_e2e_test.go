package main

// Scripted agents with the session shapes real agents send (ACP-NOTES
// §10): gemini's modes, opencode's config options with a model select,
// claude's error data, and agents that are slow or do not stop.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// wantCallsEnv tells a config agent the calls it must have received, in
// order, before the prompt; the prompt fails otherwise.
const wantCallsEnv = "ACPTERM_E2E_WANT_CALLS"

func init() {
	registerHostile("cfg-gemini", func() int { return serveAgent(newConfigAgent(false)) })
	registerHostile("cfg-opencode", func() int { return serveAgent(newConfigAgent(true)) })
	registerHostile("cfg-claude-error", func() int { return serveAgent(&errorDataAgent{}) })
	registerHostile("cfg-slow", func() int { return serveAgent(&slowAgent{cancelled: make(chan struct{})}) })
	registerHostile("cfg-stubborn", func() int { return serveAgent(&slowAgent{stubborn: true, cancelled: make(chan struct{})}) })
	registerHostile("cfg-silent", func() int { return serveAgent(&silentAgent{}) })
}

// configAgent offers gemini's modes, or opencode's config options, and
// records the configuration calls it gets.
type configAgent struct {
	baseAgent
	options bool // opencode's shape; else gemini's

	mu    sync.Mutex
	calls []string
	mode  acp.SessionModeID
	opts  []acp.SessionConfigOption
}

func newConfigAgent(options bool) *configAgent {
	a := &configAgent{options: options, mode: "default"}
	cat := func(c acp.SessionConfigOptionCategory) *acp.SessionConfigOptionCategory { return &c }
	sel := func(cur string, vals ...string) *acp.SessionConfigSelect {
		var list acp.SessionConfigSelectOptionList
		for i := 0; i < len(vals); i += 2 {
			list = append(list, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueID(vals[i]), Name: vals[i+1]})
		}
		return &acp.SessionConfigSelect{CurrentValue: acp.SessionConfigValueID(cur), Options: list}
	}
	a.opts = []acp.SessionConfigOption{
		{ID: "model", Name: "Model", Category: cat(acp.SessionConfigOptionCategoryModel),
			Kind: sel("opencode/big-pickle", "opencode/big-pickle", "Big Pickle", "opencode/grok-code", "Grok Code")},
		{ID: "mode", Name: "Mode", Category: cat(acp.SessionConfigOptionCategoryMode),
			Kind: sel("build", "build", "Build", "plan", "Plan")},
		{ID: "effort", Name: "Effort", Category: cat(acp.SessionConfigOptionCategoryThoughtLevel),
			Kind: sel("low", "low", "Low", "high", "High")},
	}
	return a
}

func (a *configAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.options {
		return &acp.NewSessionResponse{SessionID: "sess_cfg", ConfigOptions: a.opts}, nil
	}
	desc := "Prompts for approval"
	return &acp.NewSessionResponse{SessionID: "sess_cfg", Modes: &acp.SessionModeState{
		CurrentModeID: a.mode,
		AvailableModes: []acp.SessionMode{
			{ID: "default", Name: "Default", Description: &desc},
			{ID: "autoEdit", Name: "Auto Edit"},
			{ID: "yolo", Name: "YOLO"},
			{ID: "plan", Name: "Plan"},
		},
	}}, nil
}

func (a *configAgent) SetSessionMode(ctx context.Context, req *acp.SetSessionModeRequest) (*acp.SetSessionModeResponse, error) {
	a.mu.Lock()
	a.calls = append(a.calls, "set_mode:"+string(req.ModeID))
	a.mode = req.ModeID
	a.mu.Unlock()
	// gemini confirms a mode change with a notification too.
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.CurrentModeUpdate{CurrentModeID: req.ModeID}})
	return &acp.SetSessionModeResponse{}, err
}

func (a *configAgent) SetSessionConfigOption(ctx context.Context, req *acp.SetSessionConfigOptionRequest) (*acp.SetSessionConfigOptionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := req.Value.(*acp.SessionConfigSelectValue)
	if !ok {
		return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "not a select value"}
	}
	a.calls = append(a.calls, fmt.Sprintf("set:%s=%s", req.ConfigID, v.Value))
	opts := make([]acp.SessionConfigOption, len(a.opts))
	copy(opts, a.opts)
	for i := range opts {
		if opts[i].ID == req.ConfigID {
			s := *opts[i].Kind.(*acp.SessionConfigSelect)
			s.CurrentValue = v.Value
			opts[i].Kind = &s
		}
	}
	a.opts = opts
	return &acp.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

func (a *configAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	a.mu.Lock()
	got := strings.Join(a.calls, ",")
	a.mu.Unlock()
	if want := os.Getenv(wantCallsEnv); got != want {
		return nil, &acp.Error{Code: acp.CodeInternalError, Message: fmt.Sprintf("calls before the prompt: %q, want %q", got, want)}
	}
	c := a.conn.Load()
	send := func(u acp.SessionUpdate) error {
		return c.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: u})
	}
	cost := &acp.Cost{Amount: 0.0123, Currency: "USD"}
	if !a.options {
		cost = nil
	}
	for _, u := range []acp.SessionUpdate{
		&acp.AvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{
			{Name: "memory", Description: "Manage memory"}, {Name: "stats\x1b[31m", Description: "Show stats"},
		}},
		&acp.AgentMessageChunk{Content: &acp.TextContent{Text: "configured: " + got + "\n"}},
		&acp.CurrentModeUpdate{CurrentModeID: "plan"},
		&acp.UsageUpdate{Used: 1234, Size: 200000, Cost: cost},
	} {
		if err := send(u); err != nil {
			return nil, err
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// errorDataAgent fails the prompt as claude-agent-acp does: -32603 with
// the reason in data.details (here with an escape sequence and padding
// past the bound).
type errorDataAgent struct{ baseAgent }

func (a *errorDataAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	data, _ := json.Marshal(map[string]string{"details": "Query closed before response received\x1b[2J" + strings.Repeat("x", 1000)})
	return nil, &acp.Error{Code: acp.CodeInternalError, Message: "Internal error", Data: data}
}

// slowAgent works until cancelled; a stubborn one ignores the cancel. It
// says its pid first, so that the test can check it is gone.
type slowAgent struct {
	baseAgent
	stubborn  bool
	once      sync.Once
	cancelled chan struct{}
}

func (a *slowAgent) Cancel(ctx context.Context, n *acp.CancelNotification) error {
	a.once.Do(func() { close(a.cancelled) })
	return nil
}

func (a *slowAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: fmt.Sprintf("agent pid %d\n", os.Getpid())},
	}})
	if err != nil {
		return nil, err
	}
	if a.stubborn {
		// Deaf to session/cancel, and so to the context the SDK cancels
		// on it: only a kill ends this turn.
		select {}
	}
	cancelled := a.cancelled
	select {
	case <-cancelled:
		return &acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// silentAgent says nothing for 3 s (longer than the 2 s after which the
// waiting line appears), then answers.
type silentAgent struct{ baseAgent }

func (a *silentAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: "finally\n"},
	}})
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
}

// TestSessionConfigModes: --mode goes through session/set_mode before the
// prompt (gemini's shape); the mode is shown at the start and when the
// agent changes it, with the slash commands and the usage.
func TestSessionConfigModes(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{plain: true, env: []string{fakeAgentEnv + "=cfg-gemini", wantCallsEnv + "=set_mode:yolo"}},
		"run", "--no-color", "--mode", "YOLO", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "mode yolo\n", "configured: set_mode:yolo", "mode plan\n",
		`commands: /memory /stats\x1b[31m`+"\n", "context: 1,234 / 200,000 tokens\n")
	if strings.Contains(r.stdout, "\x1b") {
		t.Fatalf("an escape sequence reached stdout: %q", r.stdout)
	}
	if i, j := strings.Index(r.stdout, "mode yolo"), strings.Index(r.stdout, "configured:"); i > j {
		t.Fatalf("the mode line comes after the turn:\n%s", r.stdout)
	}
}

// TestSessionConfigOptions: --mode (a config option of category mode),
// --model (by name) and --set go through session/set_config_option, in
// this order, before the prompt (opencode's shape).
func TestSessionConfigOptions(t *testing.T) {
	t.Parallel()
	want := "set:mode=plan,set:model=opencode/grok-code,set:effort=high"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			r := acpterm(t, opts{plain: true, env: []string{fakeAgentEnv + "=cfg-opencode", wantCallsEnv + "=" + want}},
				"run", "--no-color", "--format", format, "--mode", "plan", "--model", "grok code", "--set", "effort=high",
				"-p", "go", "--", testExe(t))
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if format == "text" {
				mustContain(t, "stdout", r.stdout, "mode plan · model opencode/grok-code (Grok Code)\n",
					"context: 1,234 / 200,000 tokens · cost 0.0123 USD\n")
				return
			}
			sess := ofKind(parseEvents(t, r.stdout), "session")
			if len(sess) != 1 || sess[0].str("mode") != "plan" || sess[0].str("model") != "opencode/grok-code" || sess[0].str("sessionId") != "sess_cfg" {
				t.Fatalf("session events %v", sess)
			}
		})
	}
}

// TestSessionConfigUnknown: a mode, model, option or value the agent does
// not offer is a usage error listing what it does offer; no prompt is
// sent (the agent would fail it: it expects no calls).
func TestSessionConfigUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent string
		args  []string
		want  []string
	}{
		{"cfg-gemini", []string{"--mode", "turbo"}, []string{`--mode turbo: the agent offers no such mode; it offers default, autoEdit, yolo, plan`}},
		{"cfg-gemini", []string{"--model", "x"}, []string{"--model: the agent offers no model choice"}},
		{"cfg-opencode", []string{"--model", "gpt-9"}, []string{`--model gpt-9: the agent offers no such value for model; it offers opencode/big-pickle, opencode/grok-code`}},
		{"cfg-opencode", []string{"--set", "colour=red"}, []string{`--set colour=red: the agent offers no such option; it offers model, mode, effort`}},
		{"cfg-opencode", []string{"--set", "effort=extreme"}, []string{`--set effort=extreme: the agent offers no such value for effort; it offers low, high`}},
		{"cfg-opencode", []string{"--set", "effort"}, []string{`--set "effort": want ID=VALUE`}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"run", "--no-color"}, tc.args...), "-p", "go", "--", testExe(t))
			r := acpterm(t, opts{plain: true, env: []string{fakeAgentEnv + "=" + tc.agent, wantCallsEnv + "=none expected"}}, args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, tc.want...)
			if strings.Contains(r.stdout, "configured:") {
				t.Fatalf("the prompt was sent:\n%s", r.stdout)
			}
		})
	}
}

// TestSessionErrorData: the data of a failing session/prompt is shown,
// sanitized and bounded.
func TestSessionErrorData(t *testing.T) {
	t.Parallel()
	r := acpterm(t, opts{plain: true, env: []string{fakeAgentEnv + "=cfg-claude-error"}}, "run", "--no-color", "-p", "go", "--", testExe(t))
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, `(code -32603); data: {"details":"Query closed before response received`)
	if strings.Contains(r.stderr, "\x1b") || strings.Contains(r.stderr, strings.Repeat("x", 400)) {
		t.Fatalf("error data not sanitized or not bounded:\n%q", r.stderr)
	}
}

// TestTurnTimeout: --turn-timeout cancels the turn (exit 124); an agent
// that does not stop is killed after the cancel grace, and nothing is
// left behind.
func TestTurnTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent string
		want  string
		most  time.Duration
	}{
		{"cfg-slow", "--turn-timeout 1s (cancelled)", 10 * time.Second},
		{"cfg-stubborn", "the agent did not stop and was killed", 15 * time.Second},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			if testing.Short() && tc.agent == "cfg-stubborn" {
				t.Skip("-short: waits out --cancel-grace")
			}
			t.Parallel()
			r := acpterm(t, opts{env: []string{fakeAgentEnv + "=" + tc.agent}},
				"run", "--no-color", "--turn-timeout", "1s", "--cancel-grace", "1s", "-p", "go", "--", testExe(t))
			if r.code != 124 {
				t.Fatalf("exit %d, want 124\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "stderr", r.stderr, "the turn ran longer than --turn-timeout 1s; cancelling it", tc.want)
			mustContain(t, "stdout", r.stdout, "turn cancelled")
			var pid int
			if _, err := fmt.Sscanf(r.stdout[strings.Index(r.stdout, "agent pid "):], "agent pid %d", &pid); err != nil {
				t.Fatalf("no agent pid in %q", r.stdout)
			}
			assertGone(t, pid)
			if r.elapsed < time.Second || r.elapsed > tc.most {
				t.Fatalf("took %v", r.elapsed)
			}
		})
	}
}
