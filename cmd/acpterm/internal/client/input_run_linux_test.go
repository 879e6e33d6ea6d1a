//go:build linux

package client

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
)

// TestRunServesInput: acpterm's own client advertises and serves the
// input methods, and an SDK agent answers a stdin pipe's read and a pty's
// password prompt through them; the secret is nowhere in acpterm's
// output.
func TestRunServesInput(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash runs the password prompt (read -s)")
	}
	cfg, stdout, stderr := fakeConfig(t, "input", "go")
	cfg.Approval = permission.ApprovalAll
	if code := Run(context.Background(), cfg); code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	got := messages(events(t, stdout.String()))
	want := "input served: true\npipe: exit 0 line: hello|\npty: exit 0 Password:|got 14 characters|\n"
	if got != want {
		t.Errorf("the agent said %q, want %q", got, want)
	}
	if strings.Contains(stdout.String(), "hunter2") || strings.Contains(stderr.String(), "hunter2") {
		t.Errorf("the secret is in acpterm's output:\n%s", stdout)
	}
}
