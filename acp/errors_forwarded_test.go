package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// refusingClient refuses every terminal/create as invalid params.
type refusingClient struct{ fullClient }

func (*refusingClient) CreateTerminal(context.Context, *CreateTerminalRequest) (*CreateTerminalResponse, error) {
	return nil, fmt.Errorf("%w: cwd must be absolute", ErrInvalidParams)
}

// forwardingAgent's Prompt returns the error of its terminal/create, as it
// is or wrapped by wrap.
type forwardingAgent struct {
	minimalAgent
	conn *AgentConn
	wrap func(error) error
	seen chan error // the error the agent's call returned
}

func (a *forwardingAgent) SetConn(c *AgentConn) { a.conn = c }

func (a *forwardingAgent) Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	_, err := a.conn.CreateTerminal(ctx, &CreateTerminalRequest{SessionID: req.SessionID, Command: "true"})
	a.seen <- err
	return nil, a.wrap(err)
}

// The client's -32602 for terminal/create is not the agent's answer to
// session/prompt: forwarded as it is, it is -32603 with the client's error
// in data; re-wrapped with a sentinel, it has the sentinel's code. The
// agent itself sees the client's code.
func TestForwardedPeerErrorKeepsNotItsCode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wrap     func(error) error
		wantCode int64
		wantData bool
	}{
		{"as it is", func(err error) error { return err }, CodeInternalError, true},
		{"with context", func(err error) error { return fmt.Errorf("running the tool: %w", err) }, CodeInternalError, true},
		{"re-wrapped", func(err error) error { return fmt.Errorf("%w: %w", ErrInvalidParams, err) }, CodeInvalidParams, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := &forwardingAgent{wrap: tc.wrap, seen: make(chan error, 1)}
			cc, _ := pair(t, agent, &refusingClient{})
			if _, err := cc.Initialize(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			_, err := cc.Prompt(context.Background(), &PromptRequest{SessionID: "s"})
			seen := <-agent.seen
			var pe *PeerError
			if !errors.As(seen, &pe) || pe.Method != MethodTerminalCreate || !errors.Is(seen, ErrInvalidParams) || ErrorCode(seen) != CodeInvalidParams {
				t.Errorf("the agent's call returned %#v, want a PeerError for terminal/create with code -32602", seen)
			}
			e, ok := errors.AsType[*Error](err)
			if !ok || e.Code != tc.wantCode {
				t.Fatalf("session/prompt answered %v (code %d), want code %d", err, ErrorCode(err), tc.wantCode)
			}
			var data struct {
				Method string `json:"method"`
				Error  Error  `json:"error"`
			}
			if tc.wantData {
				if jerr := json.Unmarshal(e.Data, &data); jerr != nil || data.Method != MethodTerminalCreate || data.Error.Code != CodeInvalidParams || data.Error.Message != "invalid params: cwd must be absolute" {
					t.Errorf("data %s, want the client's error for terminal/create", e.Data)
				}
			}
		})
	}
}

// Whatever the peer put in its error, forwarding it yields an internal
// error whose data is valid JSON (or absent), never a panic.
func FuzzForwardedPeerError(f *testing.F) {
	f.Add(int64(-32602), "bad cwd", []byte(`{"path":"/x"}`))
	f.Add(int64(0), "", []byte(`not json`))
	f.Fuzz(func(t *testing.T, code int64, msg string, data []byte) {
		peer := &PeerError{Method: MethodTerminalCreate, Err: &Error{Code: code, Message: msg, Data: data}}
		e := WireError(fmt.Errorf("tool: %w", peer))
		if e.Code != CodeInternalError {
			t.Fatalf("code %d, want -32603", e.Code)
		}
		if e.Data != nil && !json.Valid(e.Data) {
			t.Fatalf("data is not JSON: %q", e.Data)
		}
		if ErrorCode(peer) != code {
			t.Fatalf("ErrorCode of the peer's error = %d, want %d", ErrorCode(peer), code)
		}
	})
}
