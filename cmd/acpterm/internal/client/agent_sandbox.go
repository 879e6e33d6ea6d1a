package client

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// This file confines the agent as a whole (Config.SandboxAgent): the
// directory npx starts in, and the line that says what is confined. The
// agent's sandbox is agentstart.Start's.

// commandEnv is the base environment of the commands run for
// terminal/create: acpterm's, without the credentials Config.PassEnv does
// not name. What it withholds is named on the confinement line.
func (d *driver) commandEnv() []string {
	env, dropped := terminal.WithoutSecrets(os.Environ(), d.cfg.PassEnv...)
	if !d.cfg.SSHAgent && os.Getenv(agentstart.SSHAuthSock) != "" {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, agentstart.SSHAuthSock+"=") })
		dropped = append(dropped, agentstart.SSHAuthSock)
	}
	d.withheld = dropped
	return env
}

// confinementLine says what the run confines, for the one dim line at its
// start, with what the kernel here could not give.
func (d *driver) confinementLine() string {
	c := &d.cfg
	sp := d.sandbox
	mode := sp.Mode.String()
	switch sp.Network {
	case sandbox.DenyNetwork:
		mode += ", network deny"
	case sandbox.ProxyNetwork:
		mode += ", network limited to " + hostList(sp.AllowHosts) + " through acpterm's proxy" + d.agentHostsNote()
	}
	mode += d.confinementNotes()
	if n := d.keyMask.Note(); n != "" && c.SandboxAgent {
		mode += "; " + textsafe.Line(n)
	}
	switch {
	case c.SandboxAgent && c.Remote != nil && c.Remote.Agent:
		return "sandbox: agent, on the target: its own state only; its commands there: " + mode
	case c.SandboxAgent && c.Remote != nil:
		return "sandbox: agent, here: its own state only; its commands, on the target: " + mode
	case c.SandboxAgent:
		return "sandbox: agent and its commands: " + mode
	case sp.Mode == sandbox.Off && sp.Network == sandbox.AllowNetwork:
		return "sandbox: off: the agent and its commands run with your rights"
	case c.AgentProfile != nil && c.AgentProfile.NotByDefault != "":
		return "sandbox: commands only: " + mode + " (the agent itself is not confined: " + c.AgentProfile.NotByDefault + "; --sandbox-agent confines it)"
	case c.AgentProfile != nil:
		return "sandbox: commands only: " + mode + " (the agent itself is not confined: --sandbox-agent=false)"
	}
	return "sandbox: commands only: " + mode + " (the agent itself is not confined: it has no profile, see acpterm agents; --sandbox-agent confines it)"
}

// confinementNotes are the confinement line's notes after the mode: what
// was left out or is missing, what is withheld from commands, and the
// secret paths hidden.
func (d *driver) confinementNotes() string {
	var mode string
	var missing, leftOut []string
	addNew := func(to *[]string, from []string) {
		for _, m := range from {
			if !slices.Contains(*to, m) {
				*to = append(*to, m)
			}
		}
	}
	cut := false
	for _, a := range d.appliedSandboxes() {
		addNew(&missing, a.Missing)
		addNew(&leftOut, a.LeftOut)
		cut = cut || a.GitSearchCut
	}
	if len(leftOut) > 0 {
		mode += "; caches left out: " + textsafe.Line(strings.Join(leftOut, "; "))
	}
	if cut {
		mode += "; the search for repositories in the caches was cut short: a .git further on is writable"
	}
	if len(missing) > 0 {
		mode += "; missing: " + strings.Join(missing, "; ")
	}
	if n := len(d.withheld); n > 0 {
		names := strings.Join(d.withheld[:min(n, 4)], ", ")
		if n > 4 {
			names += fmt.Sprintf(" and %d more", n-4)
		}
		how := "--pass-env NAME passes one"
		if slices.Contains(d.withheld, agentstart.SSHAuthSock) {
			how += ", --ssh-agent the ssh agent"
		}
		mode += "; withheld from commands: " + textsafe.Line(names) + " (" + how + ")"
	}
	if n := hiddenCount(d.appliedSandboxes()); n > 0 {
		by := ""
		if slices.ContainsFunc(d.appliedSandboxes(), func(a *sandbox.Applied) bool { return a != nil && a.HiddenByLandlock }) {
			by = " by Landlock, without a mount namespace: names visible, content not"
		}
		mode += fmt.Sprintf("; %d secret paths hidden%s (--readable PATH re-allows one)", n, by)
	}
	return mode
}

// appliedSandboxes are the sandboxes the confinement line speaks of: the
// commands' and, when it is confined, the agent's.
func (d *driver) appliedSandboxes() []*sandbox.Applied {
	var out []*sandbox.Applied
	if d.cmdSandbox != nil {
		out = append(out, d.cmdSandbox)
	}
	if d.cfg.SandboxAgent && d.agentSandbox != nil {
		out = append(out, d.agentSandbox)
	}
	return out
}

// showConfinement writes the confinement line to stderr, dim on a colour
// terminal: always where a person reads stderr, and otherwise when the
// agent itself is confined, which changes what it can do, or when a
// protection is missing here (a program reading stderr is told that much,
// and not more, on every run).
func (d *driver) showConfinement() {
	f, ok := d.cfg.Stderr.(*os.File)
	weakened := false
	for _, a := range d.appliedSandboxes() {
		weakened = weakened || len(a.Missing) > 0 || len(a.LeftOut) > 0 || a.GitSearchCut
	}
	if !d.cfg.SandboxAgent && !weakened && (!ok || !IsTerminal(f)) {
		return
	}
	d.writeStderr(render.Style{On: d.stderrColor()}.Dim("acpterm: " + d.confinementLine()))
}

// agentConfined reports whether the agent itself runs in acpterm's
// sandbox.
func (d *driver) agentConfined() bool {
	return d.cfg.SandboxAgent && d.agentSandbox != nil && d.agentSandbox.Confined()
}

// confinedFailure is the message for a turn whose execute tool calls all
// failed in acpterm's sandbox, or "". It looks at the agent's commands
// only where acpterm confined them: all of them when the agent is
// confined, else those it ran in acpterm's terminals.
func (d *driver) confinedFailure() string {
	var agent, cmds *sandbox.Applied
	if d.agentConfined() {
		agent = d.agentSandbox
	}
	if d.cmdSandbox != nil && d.cmdSandbox.Mode != sandbox.Off {
		cmds = d.cmdSandbox
	}
	return d.watch.Failure(agent, cmds)
}

// rootHint is what to add to a failure of the agent that is known to come
// from running it as root: Claude Code refuses to (its query closes before
// session/new is answered) unless IS_SANDBOX=1, which acpterm sets when it
// confines it.
func (d *driver) rootHint(msg string) string {
	if os.Geteuid() != 0 || !strings.Contains(msg, "Query closed before response received") {
		return ""
	}
	if d.agentConfined() {
		return ""
	}
	return "\n(hint: Claude Code refuses to run as root outside a sandbox: run it with --sandbox-agent, which sets IS_SANDBOX=1, or as another user)"
}
