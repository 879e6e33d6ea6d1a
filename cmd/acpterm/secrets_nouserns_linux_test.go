//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsNoUserNamespaces runs acpterm as an ordinary user where no
// user namespace can be had (inNoUserNamespaces), with an ssh key in the
// home: the run goes ahead (Landlock hides the secrets instead of the
// mounts), says so on its first line, and a command reads neither the
// key nor the ~/.npmrc that a mount would have shown redacted, while it
// reads ~/.ssh/known_hosts and the rest of the home.
func TestSecretsNoUserNamespaces(t *testing.T) {
	t.Parallel()
	base := userBase(t, "acpterm-llhide-")
	ws, home, bin := filepath.Join(base, "ws"), filepath.Join(base, "home"), filepath.Join(base, "bin")
	files := map[string]string{
		"home/.ssh/id_x":        "SECRET-ssh-key\n",
		"home/.ssh/known_hosts": "PUBLIC-known-hosts\n",
		"home/.npmrc":           "//registry.example/:_authToken=SECRET-npm\n",
		"home/notes":            "PUBLIC-notes\n",
		"ws/.keep":              "",
	}
	for name, content := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := giveToUser(t, base, bin)
	prompt := strings.Join([]string{
		"cat " + home + "/.ssh/id_x",
		"cat " + home + "/.npmrc",
		"cat " + home + "/.ssh/known_hosts",
		"cat " + home + "/notes",
		"ls " + home + "/.ssh",
	}, "\n")
	stdout, stderr, code := inNoUserNamespaces(t, ws, home, exe,
		"run", "--approve-all", "-p", prompt, "--", exe, "agent", "--keep-going")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "SECRET-") {
		t.Errorf("a secret was read:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	mustContain(t, "stdout", stdout, "PUBLIC-known-hosts", "PUBLIC-notes", "Permission denied", "id_x")
	first, _, _ := strings.Cut(stderr, "\n")
	mustContain(t, "the first line of stderr", first, "secret paths hidden by Landlock", ".npmrc", "hidden whole")
	if strings.Contains(first, "cannot hide") {
		t.Errorf("the first line still says a secret cannot be hidden: %s", first)
	}
	// acpterm sandbox says how they are hidden.
	stdout, stderr, code = inNoUserNamespaces(t, ws, home, exe, "sandbox")
	if code != 0 {
		t.Fatalf("acpterm sandbox: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	mustContain(t, "acpterm sandbox", stdout, home+"/.ssh", "secrets hidden by Landlock (no mount namespace)")
	// With --format json, the sandbox event says how; a turn whose one
	// command failed on a hidden path ends as confined (exit 6), and the
	// message names the path and --readable.
	stdout, stderr, code = inNoUserNamespaces(t, ws, home, exe,
		"run", "--approve-all", "--format", "json", "-p", "cat "+home+"/.ssh/id_x", "--", exe, "agent", "--keep-going")
	if code != 6 {
		t.Fatalf("--format json: exit %d, want 6\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	mustContain(t, "stderr", stderr, home+"/.ssh/id_x is a secret the sandbox hides: --readable PATH")
	mustContain(t, "stdout", stdout, `"event":"sandbox"`, `"by":"landlock"`, home+"/.ssh")
	if strings.Contains(stdout, "SECRET-") {
		t.Errorf("a secret was read:\n%s", stdout)
	}
}
