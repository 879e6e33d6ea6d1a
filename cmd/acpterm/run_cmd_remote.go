package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/remote"
)

// remoteFlags are run's flags for a target (--remote).
type remoteFlags struct {
	target     string
	binary     string
	installDir string
	tool       string
	toolArgs   []string
	agent      bool
}

func (f *remoteFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.target, "remote", "", "run the agent's commands and fs/* on `TARGET`: ssh://[USER@]HOST[:PORT][/DIR],\npodman://CONTAINER[/DIR], docker://CONTAINER[/DIR] or\nk8s://[CONTEXT/]NAMESPACE/POD[/CONTAINER][:DIR] (see Remote terminals above)")
	fs.StringVar(&f.binary, "remote-binary", "", "acpterm's `PATH` on the --remote target (default: copy this acpterm there\nwhen the target has no copy of it)")
	fs.StringVar(&f.installDir, "remote-install-dir", "", "keep the copies of acpterm in `DIR` on the target, where its commands\ncannot write (default: the target user's ~/.local/share/acpterm/exec-server,\nelse a directory of the user's own in /tmp)")
	fs.StringVar(&f.tool, "remote-tool", "", "the transport's `PROGRAM` (default: ssh, podman, docker or kubectl by the\ntarget's scheme)")
	fs.Var(listFlag{&f.toolArgs}, "remote-tool-arg", "an option `ARG` for the transport's program, put before the target\n(ssh -F FILE, -o NAME=VALUE; kubectl --kubeconfig FILE); repeatable")
	fs.BoolVar(&f.agent, "remote-agent", false, "start the agent on the --remote target too, through the same tool, so that\nthe commands it runs itself run there (AGENT is its command line there)")
}

// addAsk adds the flags for acpterm sandbox --remote, which asks the
// target what it can enforce.
func (f *remoteFlags) addAsk(fs *flag.FlagSet) {
	fs.StringVar(&f.target, "remote", "", "ask `TARGET` what it can enforce instead of this machine: a target of\nacpterm run --remote")
	fs.StringVar(&f.binary, "remote-binary", "", "acpterm's `PATH` on the target (default: copy this acpterm there)")
	fs.StringVar(&f.installDir, "remote-install-dir", "", "keep the copies of acpterm in `DIR` on the target")
	fs.StringVar(&f.tool, "remote-tool", "", "the transport's `PROGRAM` (default: by the target's scheme)")
	fs.Var(listFlag{&f.toolArgs}, "remote-tool-arg", "an option `ARG` for the transport's program; repeatable")
}

// given reports whether a --remote-* flag other than --remote was set.
func (f *remoteFlags) given(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || strings.HasPrefix(fl.Name, "remote-") })
	return set
}

// config is the client's Remote for the flags; the target is set.
func (f *remoteFlags) config() (*client.Remote, error) {
	t, err := remote.ParseTarget(f.target)
	if err != nil {
		return nil, fmt.Errorf("--remote: %s", strings.TrimPrefix(err.Error(), "remote: "))
	}
	if f.binary != "" && f.installDir != "" {
		return nil, errors.New("--remote-binary and --remote-install-dir exclude each other: the binary named is not copied")
	}
	return &client.Remote{Target: t, Binary: f.binary, InstallDir: f.installDir, Tool: f.tool, ToolArgs: f.toolArgs}, nil
}

// localOnly are the flags of a directory here: with --remote the
// session's directory, and the one that confines the commands and fs/*,
// is the target's DIR, so they are refused with a pointer to it. The
// limits and the shell (terminalFlags) go on to the exec server.
var localOnly = []string{"cwd", "root"}

// applyRemote checks the --remote flags and sets cfg.Remote; with a
// target, the flags that only mean something here are refused.
func (f *runFlags) applyRemote(cfg *client.Config) error {
	r := &f.remote
	if r.target == "" {
		if r.given(f.fs) {
			return errors.New("--remote-binary, --remote-install-dir, --remote-tool, --remote-tool-arg and --remote-agent need --remote TARGET")
		}
		return nil
	}
	rc, err := r.config()
	if err != nil {
		return err
	}
	t := rc.Target
	for _, name := range localOnly {
		if f.given(name) {
			example := t
			example.Dir = "/DIR"
			return fmt.Errorf("--%s with --remote: put the directory in the target instead, %s (the session's directory, and the one the commands and fs/* are confined to, is the target's: %s)", name, example, t)
		}
	}
	for _, w := range f.sandbox.writable {
		// A path on the target: nothing here can make it absolute.
		if !filepath.IsAbs(w) {
			return fmt.Errorf("--writable %s: with --remote, a path on the target must be absolute", w)
		}
	}
	for _, p := range f.sandbox.readable {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("--readable %s: with --remote, a path on the target must be absolute", p)
		}
	}
	rc.Agent = r.agent
	cfg.Remote = rc
	return nil
}
