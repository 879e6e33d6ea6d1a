package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needHiding skips where the sandbox cannot hide paths: acpterm sandbox
// reports no Landlock or no mount namespace.
func needHiding(t *testing.T) {
	t.Helper()
	r := acpterm(t, opts{plain: true}, "sandbox")
	if !strings.Contains(r.stdout, "landlock: ABI") || !strings.Contains(r.stdout, "namespaces: user+network+mount available") {
		t.Skipf("the sandbox cannot hide paths here:\n%s", r.stdout)
	}
}

// secretsHome is a fresh home (linkHome) holding the user's secrets, the
// files of ~/.ssh that stay readable, two agents' logins and an .npmrc
// with a token, and a listening ssh agent socket; env runs acpterm in it
// with no variable moving an agent's state elsewhere.
func secretsHome(t *testing.T) (home, sock string, env []string) {
	t.Helper()
	home, _, env = linkHome(t)
	for name, content := range map[string]string{
		".ssh/id_ed25519":          "SECRET-ssh-key",
		".ssh/known_hosts":         "PUBLIC-known-hosts",
		".aws/credentials":         "SECRET-aws",
		".netrc":                   "SECRET-netrc",
		".codex/auth.json":         "SECRET-codex",
		".gemini/oauth_creds.json": "SECRET-gemini",
		".npmrc":                   "registry=https://npm.example/\n//npm.example/:_authToken=SECRET-npm\n",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sock = filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	env = append(env, "SSH_AUTH_SOCK="+sock)
	for _, v := range []string{"CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "QWEN_HOME", "PI_CODING_AGENT_DIR"} {
		env = append(env, v+"=")
	}
	return home, sock, env
}

// connectScript is a shell line that connects to the unix socket sock
// and, when it can, prints SOCKET-2 (computed: the line, shown as the tool
// call's title, does not hold it).
func connectScript(t *testing.T, sock string) string {
	t.Helper()
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("needs /usr/bin/python3 to connect to a unix socket")
	}
	return py + ` -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("SOCKET-%d" % 2)' ` + sock + ` 2>/dev/null`
}

// readScript prints each file's content, or "FAILED-42 name": computed,
// so that the script itself, shown as the tool call's title, does not
// hold it.
func readScript(home string, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString("cat " + filepath.Join(home, n) + " 2>/dev/null || echo \"FAILED-$((7*6)) " + n + "\"; echo; ")
	}
	return b.String()
}

// TestSecretsHiddenE2E: under acpterm run's default confinement, the
// commands run for terminal/create, and the agent itself when confined,
// read none of the user's secrets, the .npmrc without its token, ssh's
// known_hosts as it is, and no ssh agent; --readable re-allows a path,
// --ssh-agent the ssh agent; the confinement line and the JSON output
// say what is hidden.
func TestSecretsHiddenE2E(t *testing.T) {
	needHiding(t)
	t.Parallel()
	home, sock, env := secretsHome(t)
	script := readScript(home, ".ssh/id_ed25519", ".ssh/known_hosts", ".aws/credentials", ".netrc", ".codex/auth.json",
		".gemini/oauth_creds.json", ".npmrc") + `echo "sock=$SSH_AUTH_SOCK"; ` + connectScript(t, sock)
	all := []string{"SECRET-ssh-key", "SECRET-aws", "SECRET-netrc", "SECRET-codex", "SECRET-gemini", "SECRET-npm", "SOCKET-2", "sock=" + sock}
	for _, tt := range []struct {
		name  string
		flags []string
		read  []string
	}{
		{"commands", nil, nil},
		{"commands and agent", []string{"--sandbox-agent"}, nil},
		{"readable", []string{"--sandbox-agent", "--readable", filepath.Join(home, ".aws"), "--ssh-agent"}, []string{"SECRET-aws", "SOCKET-2", "sock=" + sock}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"run", "--approve-all"}, tt.flags...), "-p", script, "--", plainAcpterm(t), "agent")
			r := acpterm(t, opts{plain: true, env: env, dir: home}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "stdout", r.stdout, append([]string{"PUBLIC-known-hosts", "registry=https://npm.example/", "FAILED-42 .netrc"}, tt.read...)...)
			for _, s := range all {
				if !strings.Contains(strings.Join(tt.read, " "), s) && strings.Contains(r.stdout, s) {
					t.Errorf("%s was read:\n%s", s, r.stdout)
				}
			}
			if len(tt.flags) > 0 {
				mustContain(t, "stderr", r.stderr, "secret paths hidden (--readable PATH re-allows one)")
			}
		})
	}

	// acpterm sandbox lists them too.
	r := acpterm(t, opts{plain: true, env: env}, "sandbox")
	mustContain(t, "acpterm sandbox", r.stdout, "secrets hidden from sandboxed commands and confined agents", filepath.Join(home, ".ssh")+",",
		"readable within them: "+filepath.Join(home, ".ssh/known_hosts"), "without its token lines (--readable PATH shows the original): "+filepath.Join(home, ".npmrc"))

	r = acpterm(t, opts{plain: true, env: env, dir: home}, "run", "--approve-all", "--format", "json", "-p", "true", "--", plainAcpterm(t), "agent")
	if r.code != 0 {
		t.Fatalf("json: exit %d\n%s", r.code, r.stderr)
	}
	var ev event
	for _, e := range parseEvents(t, r.stdout) {
		if e.str("event") == "sandbox" {
			ev = e
		}
	}
	cmds, _ := ev["commands"].(map[string]any)
	hidden, _ := cmds["hidden"].([]any)
	redacted, _ := cmds["redacted"].([]any)
	var names []string
	for _, h := range hidden {
		names = append(names, h.(string))
	}
	for _, want := range []string{".ssh", ".aws", ".codex/auth.json", sock} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("the sandbox event's hidden paths lack %s: %v", want, ev)
		}
	}
	if len(redacted) != 1 || !strings.HasSuffix(redacted[0].(string), ".npmrc") {
		t.Errorf("the sandbox event's redacted paths: %v", ev)
	}
}

// TestSecretsOwnCredentials: a confined agent reads its own login and no
// other agent's; the commands run for it in acpterm's terminals read
// neither.
func TestSecretsOwnCredentials(t *testing.T) {
	needHiding(t)
	t.Parallel()
	prog, home, env := selfExecAsCodex(t)
	for name, content := range map[string]string{".codex/auth.json": "SECRET-codex-own", ".gemini/oauth_creds.json": "SECRET-gemini-other",
		".ssh/id_ed25519": "SECRET-ssh-key"} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env = append(env, "CODEX_HOME=", "GEMINI_CLI_HOME=", "SSH_AUTH_SOCK=")
	script := readScript(home, ".codex/auth.json", ".gemini/oauth_creds.json", ".ssh/id_ed25519")
	// The agent (codex's profile, confined by default) runs it itself.
	r := acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "-p", script, "--", prog)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "SECRET-codex-own", "FAILED-42 .gemini/oauth_creds.json")
	for _, s := range []string{"SECRET-gemini-other", "SECRET-ssh-key"} {
		if strings.Contains(r.stdout, s) {
			t.Errorf("the confined codex read %s:\n%s", s, r.stdout)
		}
	}
	// Unconfined, it reads them all: the test can tell.
	r = acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "--sandbox-agent=false", "-p", script, "--", prog)
	mustContain(t, "stdout", r.stdout, "SECRET-codex-own", "SECRET-gemini-other")

	// A command run for an agent in acpterm's terminals reads no agent's.
	r = acpterm(t, opts{env: env, plain: true}, "run", "--approve-all", "-p", script, "--", plainAcpterm(t), "agent")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"SECRET-codex-own", "SECRET-gemini-other", "SECRET-ssh-key"} {
		if strings.Contains(r.stdout, s) {
			t.Errorf("a command read %s:\n%s", s, r.stdout)
		}
	}
}

// TestRemoteSSHSecrets: with --remote, the exec server hides the
// target's secrets (there, opencode's login, which the target's
// XDG_DATA_HOME places), and --readable reaches it.
func TestRemoteSSHSecrets(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	needHiding(t)
	dir := targetDir(t)
	data, cache := t.TempDir(), t.TempDir()
	login := filepath.Join(data, "opencode", "auth.json")
	if err := os.MkdirAll(filepath.Dir(login), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(login, []byte("SECRET-opencode-remote"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := append([]string{"run", "--approve-all", "--remote-tool-arg=-oSetEnv=GORACE=atexit_sleep_ms=0 SHLVL=1 XDG_DATA_HOME=" + data + " XDG_CACHE_HOME=" + cache},
		remoteArgs(t, s, dir)...)
	script := "cat " + login + ` || echo "FAILED-$((7*6))"`
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{nil, "FAILED-42"},
		{[]string{"--readable", login}, "SECRET-opencode-remote"},
	} {
		args := append(append(append([]string(nil), base...), tt.flags...), "-p", script, "--", plainAcpterm(t), "agent")
		r := acpterm(t, opts{plain: true}, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", tt.flags, r.code, r.stdout, r.stderr)
		}
		mustContain(t, "stdout", r.stdout, tt.want)
		if tt.flags == nil && strings.Contains(r.stdout, "SECRET-opencode-remote") {
			t.Errorf("the target's secret was read:\n%s", r.stdout)
		}
	}
	// acpterm sandbox --remote names it.
	r := acpterm(t, opts{plain: true}, append([]string{"sandbox"}, base[2:]...)...)
	if r.code != 0 {
		t.Fatalf("acpterm sandbox --remote: exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "acpterm sandbox --remote", r.stdout, "secrets hidden from sandboxed commands and confined agents", login)
}

// TestSecretsHiddenFromFS: an agent cannot read through fs/read_text_file,
// nor write through fs/write_text_file, what the commands' sandbox hides,
// though the workspace is the home directory that holds it.
func TestSecretsHiddenFromFS(t *testing.T) {
	needHiding(t)
	t.Parallel()
	home, _, env := secretsHome(t)
	names := []string{".ssh/id_ed25519", ".aws/credentials", ".netrc"}
	env = append(env, fakeAgentEnv+"=fs-special", fsNamesEnv+"="+strings.Join(names, ","))
	r := acpterm(t, opts{env: env, dir: home, plain: true}, "run", "--format", "json", "--approve-all", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var calls []fsCall
	fsReport(t, r.stdout, &calls)
	if len(calls) != 2*len(names) {
		t.Fatalf("%d calls reported, want %d: %+v", len(calls), 2*len(names), calls)
	}
	for _, c := range calls {
		if c.Code == 0 || !strings.Contains(c.Message, "hidden by the sandbox") {
			t.Errorf("%s %s: code %d %q, want refused as hidden", c.Op, c.Name, c.Code, c.Message)
		}
	}
	if b, err := os.ReadFile(filepath.Join(home, ".netrc")); err != nil || string(b) != "SECRET-netrc" {
		t.Errorf("~/.netrc changed: %q, %v", b, err)
	}
}
