package agentstart

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/sandbox"
)

// SSHAuthSock is the variable that leads ssh and git to the ssh agent.
const SSHAuthSock = "SSH_AUTH_SOCK"

// Secrets is the read-deny list of acpterm's sandboxes, for the commands
// and for a confined agent (which agentPolicy lets read its own login):
// the user's keys and tokens (sandbox.DefaultSecrets), every profiled
// agent's login where acpterm's environment puts it (CODEX_HOME and the
// like), and, unless sshAgent, the ssh agent's socket. readable re-allows
// paths.
func Secrets(readable []string, sshAgent bool) sandbox.Secrets {
	home, _ := os.UserHomeDir()
	s := sandbox.DefaultSecrets(home)
	for _, c := range agents.AllCredentials(os.Getenv) {
		if !slices.Contains(s.Hidden, c) {
			s.Hidden = append(s.Hidden, c)
		}
	}
	if sock := os.Getenv(SSHAuthSock); !sshAgent && filepath.IsAbs(sock) {
		s.Hidden = append(s.Hidden, sock)
	}
	s.Readable = append(s.Readable, readable...)
	return s
}
