package main

import "slices"

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
