//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootGitMount checks that a root command cannot use the capabilities
// root has over the sandbox's own mount namespace to get past the
// read-only .git mount: Landlock checks paths, not mounts, and leaves
// mount_setattr(2) and open_tree(2) alone.
func TestRootGitMount(t *testing.T) { both(t, testRootGitMount) }

func testRootGitMount(t *testing.T, b box) {
	need(t, true)
	if os.Geteuid() != 0 {
		t.Skip("only root keeps capabilities across exec")
	}
	root, _ := workspace(t)
	p := &Policy{Mode: WorkspaceWrite, Writable: []string{root}}
	git := filepath.Join(root, ".git")
	b.wantAct(t, p, root, "EPERM", "mount-rw", git, filepath.Join(git, "hooks/pre-commit"))
	b.wantAct(t, p, root, "EPERM", "clone-write", root, ".git/hooks/post-checkout")
	mustNotExist(t, filepath.Join(git, "hooks/pre-commit"))
	mustNotExist(t, filepath.Join(git, "hooks/post-checkout"))
}

// TestRootCaps checks that a root command keeps only rootCaps, also
// where no user namespace stands between it and the host's (read-only,
// network allowed).
func TestRootCaps(t *testing.T) { both(t, testRootCaps) }

func testRootCaps(t *testing.T, b box) {
	need(t, false)
	if os.Geteuid() != 0 {
		t.Skip("only root keeps capabilities across exec")
	}
	var keep uint64
	for _, c := range rootCaps {
		keep |= 1 << c
	}
	want := fmt.Sprintf("CapEff: %016x CapBnd: %016x", keep, keep)
	b.wantAct(t, &Policy{Mode: ReadOnly}, t.TempDir(), want, "caps")
}

// TestRootNetworkDeny checks that a root command whose only confinement
// is its network (mode off, network deny) cannot enter the host's network
// namespace again: without the capabilities limitRootCaps drops, root in
// the host's user namespace could setns(2) there.
func TestRootNetworkDeny(t *testing.T) { both(t, testRootNetworkDeny) }

func testRootNetworkDeny(t *testing.T, b box) {
	need(t, false)
	if os.Geteuid() != 0 {
		t.Skip("only root keeps capabilities across exec")
	}
	p := &Policy{Mode: Off, Network: DenyNetwork}
	out, code := b.sh(t, p, t.TempDir(), `nsenter --net=/proc/1/ns/net true && echo entered`)
	if code == 0 || strings.Contains(out, "entered") {
		t.Fatalf("nsenter into the host's network namespace: status %d, output %q", code, out)
	}
}
