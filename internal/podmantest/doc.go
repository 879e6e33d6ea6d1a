// Package podmantest runs real podman containers for tests of what runs
// through podman exec (the remote package, acpterm run --remote
// podman://…): an image of busybox-static made here with `podman import`,
// no registry, and containers of it that the test's cleanup removes. It
// is for Linux, with Debian's podman, runc, catatonit and busybox-static
// (.ci/run installs them); Missing says why a test must skip.
package podmantest
