package terminal

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// TestPTYOverACP: terminal/create runs on a pty when the manager's
// Options.PTY says so (acpterm run --pty) or the request's _meta asks
// (MetaPTY), at the size asked; on pipes otherwise. terminal/output gives
// the rendered text.
func TestPTYOverACP(t *testing.T) {
	t.Parallel()
	line := `if test -t 1; then tty; stty size; else echo pipes; fi; printf 'a 10%%\rb 100%%\n'`
	for _, tc := range []struct {
		name string
		opts *Options
		meta acp.Meta
		want string
	}{
		{"pipes", nil, nil, `^pipes\na 10%\rb 100%\n$`},
		{"Options.PTY", &Options{PTY: &Size{}}, nil, `^/dev/pts/\d+\n24 80\nb 100%\n$`},
		{"_meta", nil, acp.Meta{MetaPTY: json.RawMessage(`{"cols":100,"rows":30}`)}, `^/dev/pts/\d+\n30 100\nb 100%\n$`},
		{"_meta not an object", nil, acp.Meta{MetaPTY: json.RawMessage(`true`)}, `^pipes\n`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: line, Meta: tc.meta})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
				t.Fatal(err)
			}
			out, err := m.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: resp.TerminalID})
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(tc.want).MatchString(out.Output) {
				t.Errorf("output %q, want a match of %s", out.Output, tc.want)
			}
		})
	}
}
