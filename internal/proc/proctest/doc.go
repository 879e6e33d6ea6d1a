// Package proctest holds helpers for tests that run processes: on Linux,
// observing processes they did not start themselves (whether one is alive,
// which are left in a process group, waiting for them to exit without
// polling); everywhere, letting such tests run wider than one per CPU.
package proctest
