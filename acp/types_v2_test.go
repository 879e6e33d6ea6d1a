package acp_test

import (
	"encoding/json"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// The v2 types that the connections lean on decode into the Go shapes the package doc promises.
func TestV2StateUpdateShapes(t *testing.T) {
	decode := func(t *testing.T, s string) acp.V2State {
		t.Helper()
		var n acp.V2UpdateSessionNotification
		if err := json.Unmarshal([]byte(s), &n); err != nil {
			t.Fatal(err)
		}
		su, ok := n.Update.(*acp.V2StateUpdate)
		if !ok {
			t.Fatalf("update is %T, want *acp.V2StateUpdate", n.Update)
		}
		return su.State
	}
	t.Run("idle with error", func(t *testing.T) {
		st := decode(t, `{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{"code":-32603,"message":"boom"},"background":[{"type":"terminal","terminalId":"t1"}]}}`)
		idle, ok := st.(*acp.V2IdleStateUpdate)
		if !ok {
			t.Fatalf("state is %T", st)
		}
		if idle.StopReason == nil || *idle.StopReason != acp.StopReasonError {
			t.Errorf("stop reason %v, want error", idle.StopReason)
		}
		if e := idle.StopError(); e == nil || e.Code != acp.CodeInternalError || e.Message != "boom" {
			t.Errorf("StopError() = %v", e)
		}
		if len(idle.Background) != 1 {
			t.Fatalf("background %v", idle.Background)
		}
		if bt, ok := idle.Background[0].(*acp.V2BackgroundTerminal); !ok || bt.TerminalID != "t1" {
			t.Errorf("background[0] = %#v", idle.Background[0])
		}
	})
	t.Run("idle end_turn", func(t *testing.T) {
		idle := decode(t, `{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}`).(*acp.V2IdleStateUpdate)
		if *idle.StopReason != acp.StopReasonEndTurn || idle.StopError() != nil || idle.Background != nil {
			t.Errorf("%#v", idle)
		}
	})
	t.Run("requires_action", func(t *testing.T) {
		if _, ok := decode(t, `{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"requires_action"}}`).(*acp.V2RequiresActionStateUpdate); !ok {
			t.Error("not requires_action")
		}
	})
	t.Run("unknown", func(t *testing.T) {
		u, ok := decode(t, `{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"_x"}}`).(*acp.V2UnknownState)
		if !ok || u.Kind != "_x" {
			t.Errorf("%#v", u)
		}
	})
}

// A type whose wire shape did not change between versions is one Go type (one vocabulary), and
// the v2 method table hands it out.
func TestV2SharedTypes(t *testing.T) {
	m, ok := acp.V2MethodByName(acp.MethodSessionClose)
	if !ok {
		t.Fatal("no session/close in v2")
	}
	if _, ok := m.Request().(*acp.CloseSessionRequest); !ok {
		t.Errorf("v2 session/close params are %T, want the v1 type", m.Request())
	}
	if m, _ := acp.V2MethodByName(acp.MethodSessionPrompt); m.Response == nil {
		t.Error("session/prompt has no response")
	} else if _, ok := m.Response().(*acp.V2PromptResponse); !ok {
		t.Errorf("v2 session/prompt result is %T", m.Response())
	}
	for _, gone := range []string{acp.MethodTerminalCreate, acp.MethodFSReadTextFile, acp.MethodSessionLoad, acp.MethodSessionSetMode, acp.MethodAuthenticate} {
		if _, ok := acp.V2MethodByName(gone); ok {
			t.Errorf("v2 has %s", gone)
		}
	}
	for _, added := range []string{acp.MethodAuthLogin, acp.MethodAuthLogout, acp.MethodTerminalCancel, acp.MethodToolCallCancel} {
		if _, ok := acp.V2MethodByName(added); !ok {
			t.Errorf("v2 lacks %s", added)
		}
	}
}
