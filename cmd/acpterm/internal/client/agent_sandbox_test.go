package client

import (
	"os"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
)

// TestRootHint: as root, claude's "Query closed before response received"
// gets the hint, unless acpterm confined it (and set IS_SANDBOX).
func TestRootHint(t *testing.T) {
	msg := "the agent answered session/new with an error: Internal error (code -32603): Query closed before response received"
	d := &driver{}
	got := d.rootHint(msg)
	if os.Geteuid() != 0 {
		if got != "" {
			t.Errorf("not root: hint %q", got)
		}
		return
	}
	if !strings.Contains(got, "IS_SANDBOX=1") || !strings.Contains(got, "--sandbox-agent") {
		t.Errorf("rootHint = %q, want the IS_SANDBOX hint", got)
	}
	if got := d.rootHint("some other error"); got != "" {
		t.Errorf("another error: hint %q", got)
	}
	d.cfg.SandboxAgent = true
	d.agentSandbox = &sandbox.Applied{LandlockABI: 7}
	if got := d.rootHint(msg); got != "" {
		t.Errorf("confined: hint %q", got)
	}
}

// TestMakeNpxDir: the directory is made 0700 with its package.json, and
