package main

import (
	"runtime"
	"slices"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
)

// agentArgs is the agent's command line from the words left after a
// command's flags (rest, the tail of args): without "--" before them, a
// known name (acpterm agents) starts that agent, and name is that name;
// after "--", the words are always the command itself. rest is not empty.
func agentArgs(args, rest []string) (agent []string, name string, err error) {
	if at := len(args) - len(rest); at > 0 && args[at-1] == "--" {
		return rest, "", nil
	}
	resolved, err := resolveNamed(rest)
	if err != nil {
		return nil, "", err
	}
	if !slices.Equal(resolved, rest) {
		name = rest[0]
	}
	return resolved, name, nil
}

// sandboxAgentUsage is the --sandbox-agent flag of sessions and login.
const sandboxAgentUsage = "run the agent in a sandbox where it writes only its own state (its\nprofile, acpterm agents) and its npm cache, as acpterm run confines it;\non by default for an agent with a profile, =false turns it off"

// agentConfinement is how sessions and login start the agent started by
// name ("" for a command line) as command: with its profile, confined
// when --sandbox-agent (flag) says so, else when it has a profile that
// is confined by default, as acpterm run does. Elsewhere than on Linux
// there is no sandbox, and no run is ever confined.
func agentConfinement(name string, command []string, flag autoBool) (*agents.Resolved, bool, error) {
	prof, err := agentProfile(name, command)
	if err != nil {
		return nil, false, err
	}
	if flag.set {
		return prof, flag.value, nil
	}
	return prof, runtime.GOOS == "linux" && prof != nil && prof.NotByDefault == "", nil
}
