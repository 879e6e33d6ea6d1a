package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestOptionalMethodsAbsent(t *testing.T) {
	cc, ac := pair(t, minimalAgent{}, minimalClient{})
	ctx := context.Background()
	init, err := cc.Initialize(ctx, &InitializeRequest{ProtocolVersion: 1,
		ClientCapabilities: &ClientCapabilities{Terminal: true}})
	mustOK(t, "initialize", err)
	if init.ProtocolVersion != 1 {
		t.Errorf("protocol version defaulted to %d, want 1", init.ProtocolVersion)
	}
	if c := init.AgentCapabilities; c == nil || c.LoadSession || c.SessionCapabilities != nil || c.Auth != nil {
		t.Errorf("minimal agent advertised %+v", c)
	}
	if caps := ac.ClientCapabilities(); caps.Terminal || (caps.FS != nil && (caps.FS.ReadTextFile || caps.FS.WriteTextFile)) {
		t.Errorf("a client without handlers must not advertise them, got %+v", caps)
	}
	if _, err := cc.LoadSession(ctx, &LoadSessionRequest{SessionID: "s"}); ErrorCode(err) != CodeMethodNotFound {
		t.Errorf("session/load on a minimal agent: %v, want -32601", err)
	}
	if _, err := cc.ExtMethod(ctx, "_nobody/home", nil); !errors.Is(err, ErrMethodNotFound) {
		t.Errorf("unknown extension: %v, want method not found", err)
	}
	if _, err := ac.CreateTerminal(ctx, &CreateTerminalRequest{SessionID: "s", Command: "true"}); !errors.Is(err, ErrNoTerminalCapability) {
		t.Errorf("CreateTerminal without the capability: %v", err)
	}
	if _, err := ac.ReadTextFile(ctx, &ReadTextFileRequest{SessionID: "s", Path: "/x"}); ErrorCode(err) != CodeMethodNotFound {
		t.Errorf("fs/read_text_file on a minimal client: %v, want -32601", err)
	}
	// An unknown extension notification is ignored, and the connection goes on.
	mustOK(t, "ext notification", ac.ExtNotification(ctx, "_nobody/note", nil))
	if _, err := cc.NewSession(ctx, &NewSessionRequest{Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.ExtMethod(ctx, "no-underscore", nil); err == nil {
		t.Error("ExtMethod accepted a name without a leading underscore")
	}
}

// errAgent answers session/new with a configurable error.
type errAgent struct {
	minimalAgent
	err error
}

func (a errAgent) NewSession(context.Context, *NewSessionRequest) (*NewSessionResponse, error) {
	return nil, a.err
}

func TestHandlerErrorsReachThePeer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err      error
		wantCode int64
		wantMsg  string
	}{
		{fmt.Errorf("%w: terminal %q", ErrInvalidParams, "t9"), CodeInvalidParams, `invalid params: terminal "t9"`},
		{&Error{Code: -32099, Message: "custom", Data: json.RawMessage(`{"k":1}`)}, -32099, "custom"},
		{errors.New("boom"), CodeInternalError, "boom"},
		{fmt.Errorf("ctx: %w", context.Canceled), CodeRequestCancelled, "ctx: context canceled"},
	} {
		cc, _ := pair(t, errAgent{err: tc.err}, minimalClient{})
		_, err := cc.NewSession(ctx, &NewSessionRequest{Cwd: "/"})
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%v: got %T %v, want *Error", tc.err, err, err)
		}
		if e.Code != tc.wantCode || e.Message != tc.wantMsg {
			t.Errorf("%v: got code %d message %q, want %d %q", tc.err, e.Code, e.Message, tc.wantCode, tc.wantMsg)
		}
		if tc.wantCode == -32099 && string(e.Data) != `{"k":1}` {
			t.Errorf("data = %s", e.Data)
		}
	}
}

func TestBadParamsAreInvalidParams(t *testing.T) {
	cc, _ := pair(t, minimalAgent{}, minimalClient{})
	var res json.RawMessage
	err := cc.rpc.Call(context.Background(), MethodSessionPrompt, json.RawMessage(`{"sessionId":5}`), &res)
	if ErrorCode(fromRPCError(err)) != CodeInvalidParams {
		t.Fatalf("session/prompt with a numeric sessionId: %v, want -32602", err)
	}
}

// panicAgent panics in session/new.
type panicAgent struct{ minimalAgent }

func (panicAgent) NewSession(context.Context, *NewSessionRequest) (*NewSessionResponse, error) {
	panic("bug")
}

func TestHandlerPanicIsAnInternalError(t *testing.T) {
	cc, _ := pair(t, panicAgent{}, minimalClient{})
	_, err := cc.NewSession(context.Background(), &NewSessionRequest{Cwd: "/"})
	if ErrorCode(err) != CodeInternalError || !strings.Contains(err.Error(), "panicked: bug") {
		t.Fatalf("err = %v, want an internal error naming the panic", err)
	}
	if _, err := cc.Prompt(context.Background(), &PromptRequest{SessionID: "s"}); err != nil {
		t.Fatalf("connection unusable after a handler panic: %v", err)
	}
}

// connAgent needs its connection inside its handlers.
type connAgent struct {
	minimalAgent
	conn *AgentConn
}

func (a *connAgent) SetConn(c *AgentConn) { a.conn = c }

func (a *connAgent) Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	err := a.conn.SessionUpdate(ctx, &SessionNotification{SessionID: req.SessionID,
		Update: &AgentMessageChunk{Content: &TextContent{Text: "from the handler"}}})
	return &PromptResponse{StopReason: StopReasonEndTurn}, err
}

func TestSetConnBeforeServing(t *testing.T) {
	agent := &connAgent{}
	client := &fullClient{updates: make(chan *SessionNotification, 1)}
	cc, ac := pair(t, agent, client)
	if agent.conn != ac {
		t.Fatal("NewAgentConn did not hand the agent its connection")
	}
	// The race detector checks that the handler sees SetConn's write.
	if _, err := cc.Prompt(context.Background(), &PromptRequest{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if n := <-client.updates; n.Update.(*AgentMessageChunk).Content.(*TextContent).Text != "from the handler" {
		t.Fatalf("update %#v", n.Update)
	}
}

func TestErrorCodeNil(t *testing.T) {
	if got := ErrorCode(nil); got != 0 {
		t.Fatalf("ErrorCode(nil) = %d, want 0", got)
	}
	if got := ErrorCode(errors.New("x")); got != CodeInternalError {
		t.Fatalf("ErrorCode of a plain error = %d, want %d", got, CodeInternalError)
	}
}
