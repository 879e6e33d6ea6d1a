//go:build linux

package terminal

import (
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// TestNULIsInvalidParams: a NUL anywhere exec or the file system would see
// it is the request's fault (-32602), named in the message, not a host
// failure (-32603).
func TestNULIsInvalidParams(t *testing.T) {
	m := newTestManager(t, nil)
	tests := []struct {
		name string
		req  acp.CreateTerminalRequest
		want string
	}{
		{"shell command", acp.CreateTerminalRequest{Command: "echo a\x00b"}, "command contains NUL"},
		{"argv command", acp.CreateTerminalRequest{Command: "/bin/ec\x00ho", Args: []string{"x"}}, "command contains NUL"},
		{"argument", acp.CreateTerminalRequest{Command: "echo", Args: []string{"ok", "a\x00b"}}, "args[1] contains NUL"},
		{"cwd", acp.CreateTerminalRequest{Command: "true", Cwd: ptr("/tmp\x00/x")}, "cwd contains NUL"},
		{"env name", acp.CreateTerminalRequest{Command: "true", Env: []acp.EnvVariable{{Name: "A\x00", Value: "x"}}}, "env: invalid variable name"},
		{"env value", acp.CreateTerminalRequest{Command: "true", Env: []acp.EnvVariable{{Name: "A", Value: "x\x00"}}}, "env: value of \"A\" contains NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.SessionID = "s"
			_, err := m.CreateTerminal(testCtx(t), &tt.req)
			if got := acp.ErrorCode(err); err == nil || got != acp.CodeInvalidParams || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("terminal/create (-want +got):\n-code %d containing %q\n+code %d: %v", acp.CodeInvalidParams, tt.want, got, err)
			}
		})
	}
}
