//go:build linux

package terminal

import (
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
)

// TestOutputByteLimitBoundsSentText checks that outputByteLimit bounds the
// text the agent gets, not only the raw bytes kept: each invalid byte
// becomes a three-byte U+FFFD, so four raw bytes within a limit of 4 would
// otherwise go out as 12. The schema: "truncates from the beginning of the
// output to stay within the limit".
func TestOutputByteLimitBoundsSentText(t *testing.T) {
	m := newTestManager(t, nil)
	ctx := testCtx(t)
	for _, tt := range []struct {
		name      string
		cmd       string
		limit     uint64
		want      string
		truncated bool
	}{
		{"invalid bytes within the raw limit", `printf '\377\377\377\377'`, 4, "\uFFFD", true},
		{"one invalid byte, limit 1", `printf '\377'`, 1, "", true},
		{"invalid byte then text", `printf '\377ab'`, 3, "ab", true},
		{"U+FFFD that fits", `printf 'a\377'`, 4, "a\uFFFD", false},
		{"an unfinished character at exit", `printf '\342\202'`, 2, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: tt.cmd, OutputByteLimit: &tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: c.TerminalID}); err != nil {
				t.Fatal(err)
			}
			out, err := m.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: c.TerminalID})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: c.TerminalID}); err != nil {
				t.Fatal(err)
			}
			if uint64(len(out.Output)) > tt.limit || !utf8.ValidString(out.Output) {
				t.Errorf("output %q: %d bytes, limit %d", out.Output, len(out.Output), tt.limit)
			}
			if out.Output != tt.want || out.Truncated != tt.truncated {
				t.Errorf("got (%q, truncated %v), want (%q, %v)", out.Output, out.Truncated, tt.want, tt.truncated)
			}
		})
	}
}

// TestOutputRacingRelease: an Output that found the terminal just before a
// Release freed it must not report the emptied buffer as the command's
// output ("", not truncated, with an exit status); the terminal is gone,
// so it gets the error any later call gets.
func TestOutputRacingRelease(t *testing.T) {
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: "echo hello"})
	mustWait(t, m, info)
	m.found = func() {
		m.found = nil
		mustRelease(t, m, info)
	}
	out, err := m.Output(testCtx(t), info.SessionID, info.TerminalID)
	if err == nil {
		t.Fatalf("Output after release = (%q, truncated %v, status %v), want an error", out.Text, out.Truncated, out.ExitStatus)
	}
	wantCode(t, err, ErrNotFound, acp.CodeInvalidParams)
}
