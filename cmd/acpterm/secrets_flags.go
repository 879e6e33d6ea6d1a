package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/sandbox"
)

// readableHelp is --readable's help: it says what the sandbox hides.
const readableHelp = "let sandboxed commands and a confined agent read `PATH`, which the sandbox\n" +
	"hides by default with what else holds keys and tokens: ~/.ssh (but its\n" +
	"known_hosts, config and *.pub), ~/.aws, ~/.azure, ~/.config/gcloud, ~/.kube,\n" +
	"~/.docker/config.json, ~/.netrc, ~/.git-credentials, ~/.gnupg, ~/.pypirc,\n" +
	"~/.password-store, browser profiles, the agents' logins (a confined agent\n" +
	"reads its own), the ssh agent's socket; ~/.npmrc is seen without its token\n" +
	"lines; repeatable"

// maskKeysHelp is --mask-keys's help.
const maskKeysHelp = "give a confined agent a sentinel in place of its API key, which acpterm\nputs back in its requests to its API host alone (see docs/secrets.md);\n=false passes the key as it is"

// sshAgentHelp is --ssh-agent's help.
const sshAgentHelp = "let sandboxed commands and a confined agent use the ssh agent\n(SSH_AUTH_SOCK and its socket; withheld by default)"

// absPaths makes each of paths absolute, for flag.
func absPaths(flag string, paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "" {
			return nil, fmt.Errorf("%s wants a path", flag)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", flag, p, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// localSecrets is the part of acpterm sandbox's report on the secrets a
// sandbox here hides, as a run's (read-only, no --readable) would.
func localSecrets() string {
	p := &sandbox.Policy{Mode: sandbox.ReadOnly, WithoutMountNamespace: true}
	agentstart.Secrets(nil, false).Apply(p)
	a, err := p.Wrap(&exec.Cmd{Path: "/bin/true"}) // planned, never started
	if err != nil {
		return "secrets: " + err.Error() + "\n"
	}
	_ = a.Cleanup()
	return hiddenReport(a.Hidden, a.Shown, a.Redacted) + byLandlock(a.HiddenByLandlock)
}

// byLandlock is the line that says the secrets are hidden by Landlock,
// where there is no mount namespace, and what that means.
func byLandlock(yes bool) string {
	if !yes {
		return ""
	}
	return "secrets hidden by Landlock (no mount namespace): their names can be listed, not their content read; a file with token lines (~/.npmrc) is hidden whole\n"
}

// hiddenReport says what is hidden, shown through it and redacted, in a
// few lines of text.
func hiddenReport(hidden, shown, redacted []string) string {
	if len(hidden)+len(redacted) == 0 {
		return "secrets: none of the files the sandbox hides exist\n"
	}
	var b strings.Builder
	if len(hidden) > 0 {
		b.WriteString("secrets hidden from sandboxed commands and confined agents (--readable PATH lets one through): " + strings.Join(hidden, ", ") + "\n")
	}
	if len(shown) > 0 {
		b.WriteString("readable within them: " + strings.Join(shown, ", ") + "\n")
	}
	if len(redacted) > 0 {
		b.WriteString("seen by them without its token lines (--readable PATH shows the original): " + strings.Join(redacted, ", ") + "\n")
	}
	return b.String()
}
