package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
	"go.uber.org/goleak"
)

// roleEnv makes the test binary, re-executed by a test, play a part (an ACP
// peer on its stdin and stdout) instead of running the tests: no extra
// binaries to build.
const roleEnv = "ACPTERM_INTEROP_ROLE"

// sdkVersion is the pinned SDK; package.json and package-lock.json say the same.
const sdkVersion = "2.4.0"

var (
	interopDir string // absolute path of this package's directory

	nodeSkip string // why the TypeScript tests skip (node missing); "" runs them
	nodeBin  string
	npmErr   error // npm ci failed

	tmpDir     string // removed when the tests end
	acptermBin string // built by the first test that needs it (requireAcpterm)
	acptermErr error  // the build failed
	buildOnce  sync.Once
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(playRole(role))
	}
	os.Exit(setUpAndRun(m))
}

// playRole runs the re-executed test binary as one of the Go peers.
func playRole(role string) int {
	var err error
	switch role {
	case "go-agent":
		err = serveGoAgent()
	default:
		err = fmt.Errorf("unknown %s %q", roleEnv, role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "interop %s: %v\n", role, err)
		return 1
	}
	return 0
}

func setUpAndRun(m *testing.M) int {
	var err error
	if interopDir, err = os.Getwd(); err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "acpterm-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	tmpDir = tmp

	if nodeBin, err = exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "interop: node is not on PATH; CI=true requires the TypeScript SDK interop tests to run (install Node.js >= 20)")
			return 1
		}
		nodeSkip = "node is not on PATH: skipping the TypeScript SDK interop tests (install Node.js >= 20 to run them)"
	} else {
		npmErr = ensureNodeModules()
	}

	code := m.Run()
	if code == 0 {
		// Each test checks its own goroutines; this catches what a
		// cleanup left behind.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "interop: leaked goroutines:", err)
			code = 1
		}
	}
	return code
}

// ensureNodeModules runs `npm ci` when the pinned SDK (or zod, which its
// schemas need) is not installed.
func ensureNodeModules() error {
	nm := filepath.Join(interopDir, "node_modules")
	installed := func(pkg, version string) bool {
		b, err := os.ReadFile(filepath.Join(nm, pkg, "package.json"))
		var p struct{ Version string }
		return err == nil && json.Unmarshal(b, &p) == nil && (version == "" || p.Version == version)
	}
	if installed(filepath.Join("@agentclientprotocol", "sdk"), sdkVersion) && installed("zod", "") {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = interopDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", interopDir, err, out)
	}
	return nil
}

// requireNode skips without node and fails when the SDK could not be
// installed.
func requireNode(t *testing.T) {
	t.Helper()
	if nodeSkip != "" {
		t.Skip(nodeSkip)
	}
	if npmErr != nil {
		t.Fatal(npmErr)
	}
}

// requireAcpterm returns the acpterm binary, built the first time it is
// asked for: the -short run has no test that needs it. The build is
// shared with cmd/acpterm's tests (proctest.GoBuild), so an unchanged
// acpterm is not linked again.
func requireAcpterm(t *testing.T) string {
	t.Helper()
	requireNode(t)
	buildOnce.Do(func() {
		acptermBin, acptermErr = proctest.GoBuild(tmpDir, "acpterm", "build", "github.com/acpterm/acpterm/cmd/acpterm")
	})
	if acptermErr != nil {
		t.Fatal(acptermErr)
	}
	return acptermBin
}

// testCtx bounds everything a test starts.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// script is the path of one of the TypeScript scripts.
func script(name string) string { return filepath.Join(interopDir, "ts", name) }

// boundCmd makes a command that ctx kills and whose pipes cannot hold Wait
// open for long after it exits.
func boundCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = interopDir
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// nodeCmd runs one of the scripts in ts/.
func nodeCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	return boundCmd(ctx, nodeBin, append([]string{script(name)}, args...)...)
}

// selfCmd re-executes this test binary in a role.
func selfCmd(ctx context.Context, role string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cmd := boundCmd(ctx, exe)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	return cmd
}

// jsonLines decodes one JSON object per line, skipping lines that are not
// objects (a script's stray log line must not hide the rest).
func jsonLines(t *testing.T, b []byte) []obj {
	t.Helper()
	var out []obj
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var o obj
		if err := json.Unmarshal(line, &o); err != nil {
			t.Errorf("bad JSON line %q: %v", line, err)
			continue
		}
		out = append(out, o)
	}
	return out
}

// obj is a decoded JSON object, read with paths like "exit.exitCode" or
// "results.0.exitCode".
type obj map[string]any

// at returns the value at path, or nil when absent (or null).
func (o obj) at(path string) any {
	var v any = map[string]any(o)
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case obj:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func (o obj) str(path string) string {
	s, _ := o.at(path).(string)
	return s
}

func (o obj) sub(path string) obj {
	m, _ := o.at(path).(map[string]any)
	return obj(m)
}

func (o obj) String() string {
	b, _ := json.Marshal(map[string]any(o))
	return string(b)
}

// wantJSON checks the value at path against want, compared as JSON (so 7
// matches 7.0, and nil means absent or null).
func wantJSON(t *testing.T, o obj, path string, want any) {
	t.Helper()
	got := o.at(path)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s = %s, want %s\n  in %s", path, gb, wb, o)
	}
}

// wantError checks an {error: {code, message}} observation at path: the
// code, and that the message names each of mention.
func wantError(t *testing.T, o obj, path string, code int, mention ...string) {
	t.Helper()
	e := o.sub(field(path, "error"))
	if e == nil {
		t.Errorf("%s: want error %d, got %s", path, code, o.sub(path))
		return
	}
	if c, _ := e.at("code").(float64); int(c) != code {
		t.Errorf("%s: error code %v, want %d (message %q)", path, e.at("code"), code, e.str("message"))
	}
	for _, m := range mention {
		if !strings.Contains(e.str("message"), m) {
			t.Errorf("%s: error message %q does not name %q", path, e.str("message"), m)
		}
	}
}

// exitedWith checks a wait_for_exit result or exitStatus: a normal exit with
// code, no signal.
func exitedWith(t *testing.T, o obj, path string, code int) {
	t.Helper()
	wantJSON(t, o, field(path, "exitCode"), code)
	wantJSON(t, o, field(path, "signal"), nil)
}

// killedBy checks a signalled exit: the POSIX name and no exit code.
func killedBy(t *testing.T, o obj, path, signal string) {
	t.Helper()
	wantJSON(t, o, field(path, "signal"), signal)
	wantJSON(t, o, field(path, "exitCode"), nil)
}

// field joins a path and a key; an empty path is the object itself.
func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// wantCleanExit checks an {"ok": {"code", "signal"}} agent exit step. Status
// 66 is the race detector's: a re-executed Go agent had a data race.
func wantCleanExit(t *testing.T, s obj) {
	t.Helper()
	if code, _ := s.at("ok.code").(float64); code == 66 {
		t.Error("the Go agent exited with status 66: the race detector found a data race in it (its report is in the stderr logged above)")
		return
	}
	wantJSON(t, s, "ok", map[string]any{"code": 0, "signal": nil})
}

// run runs cmd to the end and returns its stdout; stderr goes to the log.
func run(t *testing.T, cmd *exec.Cmd) (stdout []byte, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	t.Logf("%s: %v in %v", filepath.Base(cmd.Path)+" "+strings.Join(cmd.Args[1:], " "), errOrOK(err), time.Since(start).Round(time.Millisecond))
	if errb.Len() > 0 {
		t.Logf("stderr:\n%s", errb.Bytes())
	}
	return out.Bytes(), err
}

// syncBuffer is a bytes.Buffer that a subprocess's output goroutine may
// write while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func errOrOK(err error) any {
	if err == nil {
		return "ok"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return err
}
