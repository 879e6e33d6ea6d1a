package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
)

// maxPromptBytes bounds a prompt read from stdin.
const maxPromptBytes = 16 << 20

// runUsage is run's help; the exit statuses come from client.ExitMeanings.
var runUsage = fmt.Sprintf(`usage: acpterm run [flags] -- AGENT [ARGS...]
       acpterm run [flags] NAME [ARGS...]     (a named agent: acpterm agents)

Another release of a named agent: "acpterm run -- npx -y PACKAGE@VERSION"
(it gets the agent's profile), or an entry in agents.json that replaces
the name (see acpterm help agents).

Runs a prompt, or an interactive session, with an ACP agent: starts AGENT
(in its own process group, its stderr to ours), initializes it with
terminal and fs support, opens a session in --cwd (or continues one), sends
the prompt and shows the turn. Commands the agent runs in acpterm's
terminals are shown under their tool call; on a TTY their last lines are
shown live. At the end the session's terminals are released and the agent
is shut down.

The prompt is --prompt TEXT, else stdin when it is not a terminal.

Interactive session: without --prompt, with stdin a terminal, acpterm opens
a session of many turns: each line typed at the "› " prompt is one turn in
the same ACP session (line editing, and history with up and down). Ctrl-C
during a turn cancels it, a second one ends the session; Ctrl-D, /exit, or
Ctrl-C at an empty line end it (exit status 0). In-session commands: /help
(acpterm's commands and the agent's slash commands), /mode [ID] and
/model [ID] (show the current one and the choices, or switch), /jobs
(what still runs in the background: terminals the agent has not released,
commands it runs itself, open tool calls), /cancel ID (stop one of those
terminals: SIGTERM, then SIGKILL), /exit. A line naming one of the agent's
slash commands is sent to it as it is.

What still runs when acpterm exits is listed on stderr (and with --format
json as a still_running event before the last one): acpterm's terminals
are killed, what the agent runs itself ends with the agent.

Sessions are remembered per agent and directory in the state directory
($XDG_STATE_HOME/acpterm, else ~/.local/state/acpterm; "acpterm sessions"
lists them). --resume continues the last one of this agent in --cwd,
--session ID a given one: with session/load when the agent offers it (its
replay of the history is shown, marked as such), else session/resume. It
works with --prompt (one more turn) and interactively.

Permissions (the agent's session/request_permission and each command it
wants to run): --approve-all allows, --deny-all denies, otherwise acpterm
asks y/n/a on the terminal ("a" allows everything for the rest of the run);
without a terminal to ask on it denies and says so on stderr.

fs/read_text_file and fs/write_text_file take absolute paths inside a
--root (symlinks resolved); writes create missing files but not missing
directories; one read returns at most 64 MiB.

Ctrl-C (or SIGTERM) cancels the turn (session/cancel); a second one kills
the agent and its commands. Either way the exit status is 130.
--turn-timeout cancels a turn that runs longer the same way. An agent that
has not ended a cancelled turn --cancel-grace later (10s) is killed; after
--turn-timeout the exit status is then 124.

Modes, models, options: --mode ID (session/set_mode, or the agent's config
option of category mode), --model ID (its config option of category model,
else session/set_model for gemini's models) and --set ID=VALUE (any config
option) are applied after session/new and before the prompt. A value the
agent does not offer is a usage error that lists the ones it does. The
text output shows the mode and model in a dim line at the start and when
they change, the agent's slash commands once, and its last usage report
(context tokens, cost) at the end; on a TTY a "waiting for AGENT" line
appears while the agent has been silent for 2s.

%s
With --format json, stdout carries one JSON object per line (events
session, replay, session_update, terminal_created, terminal_output,
terminal_exit, permission, still_running, then stop or error) and nothing
else; docs/cli.md describes each.

Authentication: when session/new answers -32000 (authentication
required), acpterm calls authenticate once and tries again, with the
agent's env_var method whose variables are all set in the environment
(when exactly one is, e.g. codex-acp's OPENAI_API_KEY), else the method
chosen from a numbered list on the terminal. --auth METHOD authenticates
with METHOD up front instead. Terminal logins are run by "acpterm login".
When the agent still needs authentication, acpterm lists its methods and
the command that sets each up.

Commands an agent runs itself and streams for display (Zed's
_meta.terminal_output extension, which acpterm advertises) are shown like
acpterm's own terminals; in JSON their terminal_created has "display":true.

Sandbox: by default the agent's commands run in workspace-write: they read
anywhere but write only in the roots, build caches of their own (Go,
npm, pip, cargo, uv, XDG_CACHE_HOME, kept in
${XDG_STATE_HOME:-~/.local/state}/acpterm/sandbox-cache: the user's caches
are read-only to them, since the user's own builds run what is there), a
private TMPDIR and the --writable paths; the .git of each writable
directory stays read-only, and /tmp is not writable (TMPDIR is). A denied write fails with the program's own "Permission denied"; the
tool call's terminal says "sandbox: MODE". --sandbox off turns it off;
--network deny also cuts the network, loopback included. An agent with a
profile (acpterm agents: the named agents, their programs by name, an
agents.json entry with "writable" paths) is itself confined too, with
everything it runs: it may also write its own state (its profile's paths,
created if missing) and gets a private TMPDIR; --sandbox-agent=false
leaves it unconfined, --sandbox-agent confines an agent without one.
Confined, an agent with a hosts list (its API hosts, or its agents.json
entry's "allowHosts") reaches only those by default, and its commands
none of them (as --network proxy); where acpterm can ask, a host not on
the list is asked about (once, for the run, or no); --network allow gives
both the network back (docs/network.md). An
agent with a sandbox of its own that cannot start inside acpterm's (codex)
is switched, confined, to its mode that runs commands directly
(agent-full-access), unless --mode names another. A dim
line on stderr at the start says what is confined. When every command
the agent ran in a turn failed because of the sandbox, acpterm says so on
stderr, with the first error and the flags that widen it, and exits 6. An agent started
through npx starts in acpterm's state directory, not the workspace, so
that npx never runs a package planted in the workspace's node_modules,
with an npm cache there that no command can write: one of its own for a
confined agent (which only it, confined, runs from), another for
unconfined ones. acpterm sessions and login start agents the same way.
"acpterm sandbox" shows what this machine enforces; the sandbox needs
Linux (elsewhere use --sandbox off).

Remote terminals: --remote TARGET runs the agent's commands, and serves its
fs/*, on another machine, a container or a pod, while the agent runs here.
acpterm starts "acpterm exec-server" there through the target's own tool,
so your ssh config, keys and agent, the container engine's connection or
your kubeconfig apply, and copies itself there first when the target has
no acpterm of this build (into ~/.local/share/acpterm/exec-server, out of
the reach of the commands there, checked by its SHA-256 before each run;
--remote-install-dir, or name one with --remote-binary). TARGET is one of
  ssh://[USER@]HOST[:PORT][/DIR]    through ssh -T (HOST may be a Host of
                                    your ssh config)
  podman://CONTAINER[/DIR]          through podman exec -i
  docker://CONTAINER[/DIR]          through docker exec -i
  k8s://[CONTEXT/]NAMESPACE/POD[/CONTAINER][:DIR]
                                    through kubectl exec -i
DIR is absolute or starts with ~ (the target user's home): it is the
session's cwd sent to the agent, and the commands may not leave it;
without one, the target user's home over ssh, the container's working
directory otherwise; fs/* paths must lie in it, and writes obey the sandbox
there as they do here. --sandbox, --network, --writable (paths on the
target), --writable-git, --writable-config and --pass-env are enforced
there: a target whose kernel cannot give what they ask fails the run
before the agent starts, in the exec server's words, and what it does
without is named on the first line of stderr, as here. --output-limit,
--max-terminals, --kill-grace, --timeout and --shell (a path there) go on
to the exec server, which applies them there. --cwd and --root are
refused with --remote: the directory is the target's.
The agent, here, is confined to its own state when it has a profile
(--sandbox-agent=false runs it unconfined).
Permissions are asked here, about the command and directory as the target
will run them. A target that cannot be reached fails the run before the
agent starts, with the tool's own message; when the connection drops
mid-run, the target kills every command it ran and the agent's calls fail.
--remote-tool and --remote-tool-arg name the tool and give it options
(ssh -F FILE, -o NAME=VALUE). Only what the agent asks acpterm to run goes
there: an agent that runs commands itself runs them here, unless
--remote-agent starts the agent on the target too, through the same tool
(AGENT is then its command line there, started in the target user's home
or the container's directory; the tool passes none of your environment,
so its credentials must be there; one with a profile is confined there
with its profile there, unless --sandbox-agent=false).
`, client.ExitSummary())

// runCmd is acpterm run: the flags checked and turned into the client's
// config (run_cmd_flags.go), the prompt read last, then the run.
func runCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newRunFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	f.promptSet = f.given("prompt", "p")
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "acpterm run: "+format+"\n(see acpterm help run)\n", a...)
		return client.ExitUsage
	}
	if len(f.fs.Args()) == 0 {
		return usage("no agent given: acpterm run [flags] NAME, or acpterm run [flags] -- AGENT [ARGS...]")
	}
	agent, agentName, err := agentArgs(args, f.fs.Args())
	if err != nil {
		return usage("%v", err)
	}
	cfg, stderrFile, err := f.config(agent, agentName, stdout, stderr)
	if err != nil {
		return usage("%v", err)
	}
	if stderrFile != nil {
		defer stderrFile.Close()
	}
	if err := f.readPrompt(cfg, stdin); err != nil {
		return usage("%v", err)
	}
	if store, err := sessionstore.Open(); err == nil {
		cfg.Store = store
	} else if f.resume {
		return usage("--resume: no state directory to find sessions in: %v", err)
	}
	// Also with --approve-all or --deny-all: the terminal is where an
	// authentication method is chosen when the agent asks for one.
	closeTTY := askOnTTY(cfg, stdin, stderr)
	defer closeTTY()
	if cfg.Interactive && cfg.TTYIn == nil {
		return usage("no prompt, and the terminal cannot be opened for an interactive session: pass --prompt TEXT")
	}
	return runClient(ctx, cfg)
}

// askOnTTY finds where to ask questions (permissions, an authentication
// method): the controlling terminal, when stdin or stderr is one (a prompt
// piped on stdin still lets the user answer). It returns the function that
// closes it.
func askOnTTY(cfg *client.Config, stdin io.Reader, stderr io.Writer) func() {
	in, _ := stdin.(*os.File)
	errf, _ := stderr.(*os.File)
	stdinTTY := in != nil && client.IsTerminal(in)
	if !stdinTTY && (errf == nil || !client.IsTerminal(errf)) {
		return func() {}
	}
	if tty, err := client.OpenTTY(); err == nil {
		cfg.TTYIn, cfg.TTYOut = tty, tty
		return func() { tty.Close() }
	}
	if stdinTTY {
		// A blocking stdin cannot be interrupted; hiding its Close keeps
		// the prompter from waiting for a read that may never end.
		cfg.TTYIn, cfg.TTYOut = struct{ io.Reader }{in}, stderr
	}
	return func() {}
}

// runClient runs the client with SIGINT and SIGTERM turned into cancels
// (signals.go).
func runClient(ctx context.Context, cfg *client.Config) int {
	return runWithSignals(ctx, cfg, client.Run)
}
