package remote

import (
	"errors"
	"os/exec"
)

// AgentCommand returns the command that runs argv on the target through
// the user's own tool, with the tool's stdin and stdout the command's, as
// Command does for the exec server: an ACP agent started there
// (acpterm run --remote-agent), so that the commands it runs itself run
// there too. It starts where the tool starts it (the user's home over ssh,
// the container's working directory), not in t.Dir: an agent takes its
// session's directory from session/new, and a program looked up in a
// workspace (npx) would find what a command planted there.
//
// With opts.Binary set (acpterm on the target, as Install gives it), the
// agent runs under that acpterm's agent host (acpterm exec-server --agent,
// HostAgent), contained and with a dead-man rule: when the connection
// drops, the agent and everything it started are ended. Without it the
// agent only sees the end of its stdin, which ends an ACP agent, but a
// program that ignores it outlives the connection (ssh closes the
// session, not its processes). opts.ServerArgs are the agent host's flags
// (--sandbox-agent: it confines the agent with its profile there).
func AgentCommand(t Target, opts *CommandOptions, argv []string) (*exec.Cmd, error) {
	if opts == nil {
		opts = &CommandOptions{}
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("remote: no command to run on the target")
	}
	if opts.Binary != "" {
		host := append([]string{opts.Binary, "exec-server", "--agent"}, opts.ServerArgs...)
		argv = checkedArgv(opts, append(append(host, "--"), argv...))
	} else if len(opts.ServerArgs) > 0 {
		return nil, errors.New("remote: the agent host's flags need acpterm on the target (CommandOptions.Binary)")
	}
	full, err := transportArgv(t, opts, argv)
	if err != nil {
		return nil, err
	}
	return exec.Command(full[0], full[1:]...), nil
}
