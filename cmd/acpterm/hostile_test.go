package main

// The hostile-agent suite: agents written to attack the client that runs
// them, each run under the real acpterm binary. Every case is one point of
// the security model (docs/sandbox.md, "Security model") and ends in bounded time
// with no process or cgroup left behind.
//
// A case registers its agent in hostileAgents from an init function in its
// own file (hostile_<topic>_test.go); the test binary, re-executed by
// `acpterm run` with ACPTERM_E2E_FAKE_AGENT set to the mode, runs it.

// hostileAgents maps a fake-agent mode to the agent's main function, which
// returns the process exit status.
var hostileAgents = map[string]func() int{}

// registerHostile adds a hostile agent mode; a duplicate name is a bug in
// the suite.
func registerHostile(mode string, run func() int) {
	if _, dup := hostileAgents[mode]; dup {
		panic("hostile agent registered twice: " + mode)
	}
	hostileAgents[mode] = run
}
