package remote_test

import (
	"testing"

	"github.com/acpterm/acpterm/internal/podmantest"
	"github.com/acpterm/acpterm/remote/remotetest"
)

// The container tests run a real podman container from an image made
// here (internal/podmantest): a rootfs of busybox-static and its applet
// links, imported with `podman import`, no registry.

// needPodman skips the test without podman, runc, catatonit (--init) or
// busybox-static.
func needPodman(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no containers")
	}
	if why := podmantest.Missing(); why != "" {
		t.Skip(why)
	}
}

// containerOptions shape a test container.
type containerOptions struct {
	// cgroup mounts the host's cgroup2 hierarchy writable, with the
	// host's cgroup namespace, so that the exec server inside can give
	// each terminal a cgroup (isolation "cgroup"); without it the server
	// falls back to the /proc scan.
	cgroup bool
}

// startContainer runs a container from the test image until the test
// ends; its cleanup removes it, on failure too, and checks that podman
// has no trace of it. It returns the container's name.
func startContainer(t testing.TB, opts containerOptions) string {
	t.Helper()
	return podmantest.Start(t, podmantest.Options{Cgroup: opts.cgroup})
}

// containerExec runs a command in the container and returns its output.
func containerExec(t testing.TB, name string, argv ...string) string {
	t.Helper()
	return podmantest.Exec(t, name, argv...)
}

// containerPS lists the container's processes whose command line holds
// one of words, as busybox ps shows them inside.
func containerPS(t testing.TB, name string, words ...string) []string {
	t.Helper()
	return podmantest.PS(t, name, words...)
}

// inContainer is a test container as remotetest's contract sees it: its
// processes are this host's (the marker scan of /proc), and busybox ps
// inside shows them as the container itself does.
type inContainer struct {
	remotetest.SameMachine
	name string
}

// PS lists the container's processes whose command line holds one of
// words (containerPS).
func (p inContainer) PS(t testing.TB, words ...string) []string {
	return containerPS(t, p.name, words...)
}
