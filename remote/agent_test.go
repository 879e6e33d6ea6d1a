package remote_test

import (
	"slices"
	"testing"

	"github.com/acpterm/acpterm/remote"
)

// TestAgentCommand: the agent's argv goes through the transport as the
// exec server's does, each word quoted for the login shell over ssh and
// passed as it is elsewhere, and not into the target's directory.
func TestAgentCommand(t *testing.T) {
	for _, tc := range []struct {
		target string
		opts   *remote.CommandOptions
		want   []string
	}{
		{"ssh://me@devbox:2222/srv/app", &remote.CommandOptions{ToolArgs: []string{"-F", "cfg"}},
			[]string{"ssh", "-T", "-F", "cfg", "-l", "me", "-p", "2222", "--", "devbox", "exec codex-acp --flag 'two words' ''"}},
		{"podman://box/work", nil, []string{"podman", "exec", "-i", "box", "codex-acp", "--flag", "two words", ""}},
		// With acpterm there, the agent runs hosted by it.
		{"podman://box/work", &remote.CommandOptions{Binary: "/tmp/acpterm-0/ab/acpterm"},
			[]string{"podman", "exec", "-i", "box", "/tmp/acpterm-0/ab/acpterm", "exec-server", "--agent", "--", "codex-acp", "--flag", "two words", ""}},
		{"k8s://ctx/ns/pod/c:/w", &remote.CommandOptions{Tool: "/opt/kubectl"},
			[]string{"/opt/kubectl", "--context", "ctx", "exec", "-i", "-n", "ns", "pod", "-c", "c", "--", "codex-acp", "--flag", "two words", ""}},
	} {
		tg, err := remote.ParseTarget(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := remote.AgentCommand(tg, tc.opts, []string{"codex-acp", "--flag", "two words", ""})
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		got := cmd.Args
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.target, got, tc.want)
		}
	}
	tg, _ := remote.ParseTarget("ssh://devbox")
	if _, err := remote.AgentCommand(tg, nil, nil); err == nil {
		t.Error("an empty argv was accepted")
	}
}
