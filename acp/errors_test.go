package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

func TestWireError(t *testing.T) {
	var syntaxErr error = json.Unmarshal([]byte(`{`), new(any))
	var typeErr error = json.Unmarshal([]byte(`{"sessionId":5}`), new(PromptRequest))
	custom := &Error{Code: -32050, Message: "quota", Data: json.RawMessage(`{"left":0}`)}
	for _, tc := range []struct {
		name     string
		err      error
		wantCode int64
		wantMsg  string
		wantData string
	}{
		{"sentinel", ErrInvalidParams, CodeInvalidParams, "invalid params", ""},
		{"wrapped sentinel keeps its code", fmt.Errorf("%w: terminal %q", ErrInvalidParams, "t1"), CodeInvalidParams, `invalid params: terminal "t1"`, ""},
		{"doubly wrapped", fmt.Errorf("create: %w", fmt.Errorf("%w: gone", ErrResourceNotFound)), CodeResourceNotFound, "create: resource not found: gone", ""},
		{"custom code and data", fmt.Errorf("ask later: %w", custom), -32050, "ask later: quota", `{"left":0}`},
		{"engine error", &jsonrpc2.Error{Code: -32601, Message: "nope"}, -32601, "nope", ""},
		{"cancelled", context.Canceled, CodeRequestCancelled, "context canceled", ""},
		{"wrapped cancelled", fmt.Errorf("wait: %w", context.Canceled), CodeRequestCancelled, "wait: context canceled", ""},
		{"syntax error", syntaxErr, CodeInvalidParams, syntaxErr.Error(), ""},
		{"type error", fmt.Errorf("params: %w", typeErr), CodeInvalidParams, "params: " + typeErr.Error(), ""},
		{"plain error", errors.New("disk full"), CodeInternalError, "disk full", ""},
		{"deadline is internal", context.DeadlineExceeded, CodeInternalError, "context deadline exceeded", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := WireError(tc.err)
			if got.Code != tc.wantCode || got.Message != tc.wantMsg || string(got.Data) != tc.wantData {
				t.Errorf("WireError(%v) = {%d %q %s}, want {%d %q %s}", tc.err, got.Code, got.Message, got.Data, tc.wantCode, tc.wantMsg, tc.wantData)
			}
			if ErrorCode(tc.err) != tc.wantCode {
				t.Errorf("ErrorCode = %d, want %d", ErrorCode(tc.err), tc.wantCode)
			}
		})
	}
	if WireError(nil) != nil {
		t.Error("WireError(nil) != nil")
	}
}

func TestErrorIsMatchesCodes(t *testing.T) {
	received := &Error{Code: CodeInvalidParams, Message: "terminal t1 not found"}
	if !errors.Is(received, ErrInvalidParams) {
		t.Error("a received -32602 does not match ErrInvalidParams")
	}
	if errors.Is(received, ErrInternal) {
		t.Error("a -32602 matches ErrInternal")
	}
	if !errors.Is(fmt.Errorf("x: %w", received), ErrInvalidParams) {
		t.Error("a wrapped -32602 does not match ErrInvalidParams")
	}
	if (&Error{Code: 7}).Error() != "acp error 7" {
		t.Errorf("empty message renders as %q", (&Error{Code: 7}).Error())
	}
}
