//go:build linux

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// These tests run acpterm in sessions one after the other, as a user
// would: what a confined command or agent writes in one must not run
// unconfined in the next (`sessions`, `login`, `run`).

func init() {
	registerHostile("run-command", func() int { return serveAgent(&commandAgent{}) })
}

// commandEnv names the shell command the commandAgent runs.
const commandEnv = "ACPTERM_E2E_COMMAND"

// commandAgent runs $ACPTERM_E2E_COMMAND in a client terminal (sh -c),
// waits for it and says its exit status and output.
type commandAgent struct{ baseAgent }

func (a *commandAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	term, err := conn.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: req.SessionID, Command: "sh",
		Args: []string{"-c", os.Getenv(commandEnv)}})
	if err != nil {
		return nil, err
	}
	defer term.Close()
	st, err := term.WaitForExit(ctx)
	if err != nil {
		return nil, err
	}
	out, err := term.Output(ctx)
	if err != nil {
		return nil, err
	}
	code := -1
	if st.ExitCode != nil {
		code = int(*st.ExitCode)
	}
	text := fmt.Sprintf("command exit %d: %s", code, out.Output)
	err = conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: text},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// runCommand is a session that runs command confined, through acpterm run
// with the commandAgent in dir.
func runCommand(t *testing.T, env []string, dir, command string) result {
	t.Helper()
	env = append(env, fakeAgentEnv+"=run-command", commandEnv+"="+command)
	r := acpterm(t, opts{plain: true, env: env, dir: dir}, "run", "--approve-all", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("the confined command's session: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

// agentStartEnv is a user's environment of its own: a temporary HOME and
// state directory, npx's directory on PATH (and no claude-agent-acp), npm
// offline unless a registry is given.
func agentStartEnv(t *testing.T, npx, registry string) (env []string, home, state string) {
	t.Helper()
	home, state = t.TempDir(), t.TempDir()
	env = []string{"HOME=" + home, "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"PATH=" + filepath.Dir(npx) + string(os.PathListSeparator) + "/usr/bin:/bin",
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false"}
	if registry == "" {
		return append(env, "npm_config_offline=true"), home, state
	}
	return append(env, "npm_config_registry="+registry), home, state
}

// TestSessionsLoginNpxPlantedInWorkspace: a confined command of one
// session plants a package named like claude's agent in the workspace's
// node_modules; `acpterm sessions claude` and `acpterm login claude` run
// in that workspace afterwards do not run it (npx starts outside the
// workspace, and the agent is confined).
func TestSessionsLoginNpxPlantedInWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a session after another, with real builds or npm (the whole suite runs it)")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed")
	}
	t.Parallel()
	env, _, _ := agentStartEnv(t, npx, "")
	ws := t.TempDir()
	marker := filepath.Join(t.TempDir(), "marker")
	pkg := "node_modules/@agentclientprotocol/claude-agent-acp"
	plant := fmt.Sprintf(`set -e
mkdir -p %[1]s node_modules/.bin
printf '{"name": "@agentclientprotocol/claude-agent-acp", "version": "9.9.9", "bin": {"claude-agent-acp": "run.sh"}}' > %[1]s/package.json
printf '#!/bin/sh\necho planted >> %[2]s\n' > %[1]s/run.sh
chmod +x %[1]s/run.sh
ln -s ../@agentclientprotocol/claude-agent-acp/run.sh node_modules/.bin/claude-agent-acp
echo planted-ok`, pkg, marker)
	r := runCommand(t, env, ws, plant)
	if !strings.Contains(r.stdout, "planted-ok") {
		t.Fatalf("the command did not plant the package\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, pkg, "run.sh")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"sessions", "--timeout", "30s", "claude"},
		{"login", "--yes", "--init-timeout", "30s", "claude"},
	} {
		r := acpterm(t, opts{plain: true, env: env, dir: ws}, args...)
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("acpterm %s ran the package planted in the workspace's node_modules (exit %d)\nstderr:\n%s", args[0], r.code, r.stderr)
			_ = os.Remove(marker)
		}
	}
}

// npmPackage is a tarball of an npm package named like claude's agent
// whose program says that it ran, on stderr and in its exit status 1.
func npmPackage(t *testing.T) []byte {
	t.Helper()
	files := []struct {
		name, body string
		mode       int64
	}{
		{"package/package.json", `{"name": "@agentclientprotocol/claude-agent-acp", "version": "1.0.0", "bin": {"claude-agent-acp": "run.sh"}}`, 0o644},
		{"package/run.sh", "#!/bin/sh\necho 'the real package ran' >&2\nexit 1\n", 0o755},
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// npmRegistry serves that package, and nothing else, as an npm registry
// on 127.0.0.1.
func npmRegistry(t *testing.T) string {
	t.Helper()
	tgz := npmPackage(t)
	sum := sha512.Sum512(tgz)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tgz") {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(tgz)
			return
		}
		if !strings.Contains(r.URL.Path, "claude-agent-acp") {
			http.NotFound(w, r)
			return
		}
		version := map[string]any{"name": "@agentclientprotocol/claude-agent-acp", "version": "1.0.0",
			"bin": map[string]string{"claude-agent-acp": "run.sh"},
			"dist": map[string]string{"tarball": "http://" + r.Host + "/claude-agent-acp-1.0.0.tgz",
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "@agentclientprotocol/claude-agent-acp",
			"dist-tags": map[string]string{"latest": "1.0.0"}, "versions": map[string]any{"1.0.0": version}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// rewriteInstalled is a command that rewrites every installed copy of the
// package below the directories given, so that it writes marker.
func rewriteInstalled(marker string, dirs ...string) string {
	return fmt.Sprintf(`n=0
for f in $(find %s -path '*claude-agent-acp/run.sh' 2>/dev/null); do
  printf '#!/bin/sh\necho planted >> %s\n' > "$f" && n=$((n+1))
done
echo "rewrote $n"`, strings.Join(dirs, " "), marker)
}

// npmInstalledClaude starts a test of the npm cache (not in -short: npx
// and a registry, several sessions): `acpterm sessions claude` installs
// claude's agent from the test's registry through npx, and runs it. It
// returns the test's environment, home and state directories, and a
// marker path that nothing has written yet.
func npmInstalledClaude(t *testing.T) (env []string, home, state, marker string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a session after another, with real builds or npm (the whole suite runs it)")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed")
	}
	t.Parallel()
	env, home, state = agentStartEnv(t, npx, npmRegistry(t))
	marker = filepath.Join(t.TempDir(), "marker")
	r := acpterm(t, opts{plain: true, env: env}, "sessions", "--timeout", "60s", "claude")
	if !strings.Contains(r.stderr, "the real package ran") {
		t.Fatalf("npx did not install and run the package (exit %d)\nstderr:\n%s", r.code, r.stderr)
	}
	return env, home, state, marker
}

// TestSessionsLoginNpmCacheRewritten: npx installs claude's agent (from a
// registry on 127.0.0.1) where acpterm starts it from; a confined command
// of the next session rewrites every installed copy it can find under
// the home and state directories; `acpterm sessions claude`, `acpterm
// login claude` and `acpterm run claude`, unconfined and confined, from
// another directory, then run the package as it was installed, not the rewritten
// one (npx does not check its files again). Then the copy the confined
// agent itself may rewrite, in its own cache: what runs from there runs
// confined, and an unconfined start does not run it.
func TestSessionsLoginNpmCacheRewritten(t *testing.T) {
	// Session 1 installs the package.
	env, home, state, marker := npmInstalledClaude(t)
	// Session 2: a confined command, in a workspace of its own.
	r := runCommand(t, env, t.TempDir(), rewriteInstalled(marker, home, state))
	t.Logf("the command: %s", strings.TrimSpace(r.stdout))
	// Session 3: the user lists sessions, logs in and runs the agent,
	// unconfined and confined, elsewhere.
	for _, args := range [][]string{
		{"sessions", "--timeout", "60s", "claude"},
		{"login", "--yes", "--init-timeout", "60s", "claude"},
		{"run", "--sandbox-agent=false", "-p", "hi", "claude"},
		{"run", "-p", "hi", "claude"},
	} {
		r := acpterm(t, opts{plain: true, env: env}, args...)
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("acpterm %s ran the package a confined command rewrote in npm's cache (exit %d)\nstderr:\n%s", args[0], r.code, r.stderr)
			_ = os.Remove(marker)
			continue
		}
		if !strings.Contains(r.stderr, "the real package ran") {
			t.Errorf("acpterm %s did not run the installed package (exit %d)\nstderr:\n%s", args[0], r.code, r.stderr)
		}
	}
}

// TestNpmCacheOfConfinedAgentRunsConfined: the confined agent may write
// its own npm cache (npx in its sandbox installs there), so what it plants
// there runs again only confined: `acpterm sessions claude` runs it in the
// sandbox (the planted program cannot write outside its state), and
// `acpterm sessions --sandbox-agent=false claude` uses another cache,
// which nothing confined writes.
func TestNpmCacheOfConfinedAgentRunsConfined(t *testing.T) {
	env, home, state, marker := npmInstalledClaude(t)
	// What the agent, confined, could do to the cache it was started
	// from: acpterm's, or npm's own where acpterm used that.
	installed := filepath.Join("_npx", "*", "node_modules", "@agentclientprotocol", "claude-agent-acp", "run.sh")
	found, _ := filepath.Glob(filepath.Join(state, "acpterm", "npm", "*", installed))
	npmOwn, _ := filepath.Glob(filepath.Join(home, ".npm", installed))
	found = append(found, npmOwn...)
	if len(found) != 1 {
		t.Fatalf("installed copies in acpterm's npm caches: %q, want one", found)
	}
	planted := fmt.Sprintf("#!/bin/sh\n(echo planted >> %s) 2>/dev/null || echo 'the planted program ran, confined' >&2\nexit 1\n", marker)
	if err := os.WriteFile(found[0], []byte(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	r := acpterm(t, opts{plain: true, env: env}, "sessions", "--timeout", "60s", "claude")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("acpterm sessions ran what the confined agent planted in its cache unconfined (exit %d)\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "the planted program ran, confined") {
		t.Errorf("the planted program did not run, confined (exit %d)\nstderr:\n%s", r.code, r.stderr)
	}
	r = acpterm(t, opts{plain: true, env: env}, "sessions", "--sandbox-agent=false", "--timeout", "60s", "claude")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("acpterm sessions --sandbox-agent=false ran what the confined agent planted (exit %d)\nstderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "the real package ran") {
		t.Errorf("acpterm sessions --sandbox-agent=false did not install and run the package (exit %d)\nstderr:\n%s", r.code, r.stderr)
	}
}

// TestLoginConfined: acpterm login starts an agent with a profile, and the
// terminal login it names, confined as acpterm run confines the agent: the
// login command writes its token in the agent's state, and cannot write
// outside it; --sandbox-agent=false runs it unconfined.
func TestLoginConfined(t *testing.T) {
	t.Parallel()
	// Named like claude's agent, the test binary has claude's profile.
	prog := filepath.Join(t.TempDir(), "claude-agent-acp")
	writeScript(t, prog, "exec "+testExe(t)+` "$@"`)
	for _, tc := range []struct {
		flags []string
		ran   bool
	}{
		{nil, false},
		{[]string{"--sandbox-agent=false"}, true},
	} {
		home := t.TempDir()
		if err := os.Mkdir(filepath.Join(home, ".claude"), 0o700); err != nil {
			t.Fatal(err)
		}
		mark := filepath.Join(t.TempDir(), "mark")
		env := append(authEnv("shell", fakeTokenFile+"="+filepath.Join(home, ".claude", "tok"), fakeMarkFile+"="+mark), "HOME="+home)
		args := append(append([]string{"login", "--yes"}, tc.flags...), "--", prog)
		r := acpterm(t, opts{plain: true, env: env}, args...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d\n%s", tc.flags, r.code, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "acpterm: running /bin/sh -c ", "acpterm: logged in")
		if _, err := os.Stat(mark); (err == nil) != tc.ran {
			t.Errorf("%q: the login command wrote outside the agent's state: %v, want %v\n%s", tc.flags, err == nil, tc.ran, r.stderr)
		}
	}
}
