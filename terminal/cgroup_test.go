//go:build linux

package terminal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
)

// The manager's cgroup is named so that a later host can tell whether its
// owner died (internal/proc/cgroup), and sits under the host's own cgroup.
func TestManagerCgroupPlacement(t *testing.T) {
	m := newTestManager(t, nil)
	if m.Isolation() != IsolationCgroup {
		t.Skipf("isolation %s", m.Isolation())
	}
	own, err := cgroup.Own()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(m.iso.dir) != own {
		t.Errorf("manager cgroup %s is not under the host's cgroup %s", m.iso.dir, own)
	}
	name := filepath.Base(m.iso.dir)
	if !strings.HasPrefix(name, fmt.Sprintf("acpterm-%d-", os.Getpid())) || !strings.Contains(name, "-terms-") {
		t.Errorf("manager cgroup named %q", name)
	}
	if cgroup.Stale(name) {
		t.Errorf("a live manager's cgroup %q counts as stale", name)
	}
}
