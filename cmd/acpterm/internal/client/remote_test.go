package client

import (
	"strings"
	"testing"

	"github.com/acpterm/acpterm/terminal"
)

// TestPendingCreateRuns: a create's request is matched to the argv the
// target runs for it, and not to another's.
func TestPendingCreateRuns(t *testing.T) {
	for _, tc := range []struct {
		c    pendingCreate
		argv []string
		want bool
	}{
		{pendingCreate{command: "make test"}, []string{"/bin/bash", "-c", "make test"}, true},
		{pendingCreate{command: "make test"}, []string{"/bin/bash", "-c", "make"}, false},
		{pendingCreate{command: "make test"}, []string{"make test"}, false},
		{pendingCreate{command: "go", args: []string{"test", "./..."}}, []string{"/usr/local/go/bin/go", "test", "./..."}, true},
		{pendingCreate{command: "/opt/go", args: []string{"test"}}, []string{"/opt/go", "test"}, true},
		{pendingCreate{command: "go", args: []string{"test"}}, []string{"/usr/bin/gofmt", "test"}, false},
		{pendingCreate{command: "go", args: []string{"test"}}, []string{"/usr/bin/go", "test", "-v"}, false},
	} {
		if got := tc.c.runs(tc.argv); got != tc.want {
			t.Errorf("%q %q runs %q = %v, want %v", tc.c.command, tc.c.args, tc.argv, got, tc.want)
		}
	}
}

// TestPromptSaysWhere: the approval of a command for a target names the
// target after the directory.
func TestPromptSaysWhere(t *testing.T) {
	info := &terminal.Info{Command: "make test", Shell: true, Cwd: "/srv/app", Where: "ssh://devbox"}
	if got := promptCommand(info); !strings.HasSuffix(got, "\n  in /srv/app on ssh://devbox") {
		t.Errorf("prompt %q", got)
	}
	info.Where = ""
	if got := promptCommand(info); strings.Contains(got, " on ") {
		t.Errorf("prompt for a command here %q", got)
	}
}
