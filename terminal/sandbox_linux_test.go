//go:build linux

package terminal

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"golang.org/x/sys/unix"
)

// noLandlockEnv makes TestMain hide Landlock from the test binary (and
// everything it starts) with a seccomp filter, to play a kernel without
// it; see TestSandboxUnsupported.
const noLandlockEnv = "TERMINAL_TEST_NO_LANDLOCK"

func TestSandboxNilIsOff(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	outside := t.TempDir()
	info := mustCreate(t, m, Request{Command: "echo x > " + outside + "/f"})
	if info.Sandbox != nil {
		t.Errorf("Info.Sandbox = %v without Policy.Sandbox", info.Sandbox)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
	mustRelease(t, m, info)
	if _, err := os.Stat(filepath.Join(outside, "f")); err != nil {
		t.Fatalf("an unsandboxed command could not write outside: %v", err)
	}
}

func TestSandboxWorkspaceWrite(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	m := newTestManager(t, &Options{
		DefaultCwd: ws,
		Policy: &Policy{
			Roots:   []string{ws},
			Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite},
		},
	})
	sub, err := m.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Writes in the root and in TMPDIR succeed, one outside fails with the
	// program's own error; the command reports where TMPDIR was.
	line := `echo in > inside && echo tmp > "$TMPDIR/t" && echo "$TMPDIR" && echo out > ` + outside + `/f`
	info := mustCreate(t, m, Request{Command: line})
	st := mustWait(t, m, info)
	out := mustOutput(t, m, info)
	if st.ExitCode == nil || *st.ExitCode == 0 {
		t.Errorf("the write outside the workspace succeeded: %v\n%s", st, out.Text)
	}
	// Outside the writable paths the mounts are read-only.
	if !strings.Contains(out.Text, "Read-only file system") {
		t.Errorf("output lacks the program's Read-only file system:\n%s", out.Text)
	}
	if _, err := os.Stat(filepath.Join(ws, "inside")); err != nil {
		t.Errorf("no write inside the root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("the file outside the workspace exists")
	}

	a := info.Sandbox
	if a == nil || a.Mode != sandbox.WorkspaceWrite || !a.Confined() || a.TempDir == "" || !a.Shared {
		t.Fatalf("Info.Sandbox = %v", a)
	}
	tmp := strings.TrimSpace(strings.SplitN(out.Text, "\n", 2)[0])
	if tmp != a.TempDir {
		t.Errorf("TMPDIR = %q, Info.Sandbox.TempDir = %q", tmp, a.TempDir)
	}
	real, _ := filepath.EvalSymlinks(ws)
	if len(a.Writable) == 0 || a.Writable[0] != real {
		t.Errorf("Writable %q does not start with the root %q", a.Writable, real)
	}
	// The Created event carries the same Info.
	for {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventCreated {
			if ev.Info.Sandbox != a {
				t.Errorf("Created event's Info.Sandbox = %v, want %v", ev.Info.Sandbox, a)
			}
			break
		}
	}

	mustRelease(t, m, info)
	if _, err := os.Stat(a.TempDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TMPDIR %s still there after release: %v", a.TempDir, err)
	}
}

// Without Roots the workspace is the command's cwd; ReadOnly writes only
// in TMPDIR.
func TestSandboxModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode     sandbox.Mode
		cwdWrite bool
	}{
		{sandbox.Off, true},
		{sandbox.ReadOnly, false},
		{sandbox.WorkspaceWrite, true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			cwd := t.TempDir()
			m := newTestManager(t, &Options{DefaultCwd: cwd, Policy: &Policy{Sandbox: &sandbox.Policy{Mode: tc.mode}}})
			line := `echo ok > here`
			if tc.mode != sandbox.Off {
				line = `echo t > "$TMPDIR/t" && ` + line
			}
			out, st := runTerminal(t, m, Request{Command: line})
			if got := st.ExitCode != nil && *st.ExitCode == 0; got != tc.cwdWrite {
				t.Errorf("write in the cwd succeeded: %v, want %v\n%s", got, tc.cwdWrite, out.Text)
			}
			if !tc.cwdWrite && !strings.Contains(out.Text, "Read-only file system") {
				t.Errorf("output:\n%s", out.Text)
			}
		})
	}
}

func TestSandboxNetworkDeny(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is needed for /dev/tcp")
	}
	l := listenLoopback(t)
	line := `exec 3<>/dev/tcp/127.0.0.1/` + l
	for _, tc := range []struct {
		net  sandbox.Network
		want bool
	}{{sandbox.AllowNetwork, true}, {sandbox.DenyNetwork, false}} {
		m := newTestManager(t, &Options{Policy: &Policy{Sandbox: &sandbox.Policy{Mode: sandbox.ReadOnly, Network: tc.net}}})
		info := mustCreate(t, m, Request{Command: "bash", Args: []string{"-c", line}})
		st := mustWait(t, m, info)
		out := mustOutput(t, m, info)
		mustRelease(t, m, info)
		if got := *st.ExitCode == 0; got != tc.want {
			t.Errorf("network %s: connected %v, want %v\n%s", tc.net, got, tc.want, out.Text)
		}
		if tc.net == sandbox.DenyNetwork && !info.Sandbox.NetNamespace {
			t.Errorf("Info.Sandbox = %v", info.Sandbox)
		}
	}
}

// listenLoopback opens a TCP listener on the host's loopback and returns
// its port; connections are accepted and closed by the test's end.
func listenLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	_, port, _ := strings.Cut(ln.Addr().String(), ":")
	return port
}

// A kernel without Landlock (simulated by a seccomp filter in a child
// test process) fails create with acp.CodePermissionDenied naming what is missing,
// and runs nothing; BestEffort runs the command and says what is missing.
func TestSandboxUnsupported(t *testing.T) {
	if os.Getenv(noLandlockEnv) == "" {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestSandboxUnsupported$", "-test.v")
		cmd.Env = append(os.Environ(), noLandlockEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child test: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestSandboxUnsupported") {
			t.Fatalf("child test did not pass:\n%s", out)
		}
		return
	}
	cwd := t.TempDir()
	m := newTestManager(t, &Options{DefaultCwd: cwd, Policy: &Policy{Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite}}})
	_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "echo ran > ran"})
	wantCode(t, err, ErrDenied, acp.CodePermissionDenied)
	if !errors.Is(err, sandbox.ErrUnsupported) || !strings.Contains(err.Error(), "Landlock is not available") {
		t.Errorf("error does not name what is missing: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ran")); err == nil {
		t.Error("the command ran")
	}
	if n := len(m.Terminals("s")); n != 0 {
		t.Errorf("%d terminals after a failed create", n)
	}

	mb := newTestManager(t, &Options{DefaultCwd: cwd, Policy: &Policy{Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite, BestEffort: true}}})
	info := mustCreate(t, mb, Request{Command: "true"})
	wantStatus(t, mustWait(t, mb, info), ExitStatus{ExitCode: code(0)})
	mustRelease(t, mb, info)
	if a := info.Sandbox; a == nil || a.Confined() || len(a.Missing) == 0 {
		t.Errorf("best effort: Info.Sandbox = %v", a)
	}
}

// hideLandlock installs a seccomp filter on every thread that fails the
// Landlock system calls with ENOSYS, as a kernel without Landlock does.
// It does not check the architecture: the numbers are this build's, and
// the test binary runs nothing of another architecture.
func hideLandlock() error {
	// no_new_privs and the filter are set on this thread; TSYNC copies
	// both to the others.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const (
		ldW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		nrOff = 0 // offsetof(struct seccomp_data, nr)
	)
	filter := []unix.SockFilter{
		{Code: ldW, K: nrOff},
		{Code: jeq, Jt: 3, K: unix.SYS_LANDLOCK_CREATE_RULESET},
		{Code: jeq, Jt: 2, K: unix.SYS_LANDLOCK_ADD_RULE},
		{Code: jeq, Jt: 1, K: unix.SYS_LANDLOCK_RESTRICT_SELF},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return errno
	}
	return nil
}

// parentPID reads the parent of pid from /proc.
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// The sandboxed commands of a session are started by one helper, each
// with its own TMPDIR (removed at release); another session gets another
// helper; ReleaseSession stops the session's.
func TestSandboxSpawnerPerSession(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, &Options{Policy: &Policy{Sandbox: &sandbox.Policy{Mode: sandbox.ReadOnly}}})
	start := func(sid acp.SessionID) Info {
		return mustCreate(t, m, Request{SessionID: sid, Command: `echo x > "$TMPDIR/f" && exec sleep 100`})
	}
	a1, a2, b1 := start("a"), start("a"), start("b")
	helperA, helperB := parentPID(t, a1.PID), parentPID(t, b1.PID)
	if parentPID(t, a2.PID) != helperA || helperA == helperB || helperA == os.Getpid() {
		t.Errorf("helpers: a %d and %d, b %d; host %d", helperA, parentPID(t, a2.PID), helperB, os.Getpid())
	}
	if a1.Sandbox.TempDir == a2.Sandbox.TempDir || !a1.Sandbox.Shared {
		t.Errorf("Info.Sandbox: %v and %v", a1.Sandbox, a2.Sandbox)
	}
	for _, info := range []Info{a1, a2, b1} {
		if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, mustWait(t, m, info), ExitStatus{Signal: sig("SIGTERM")})
	}
	mustRelease(t, m, a1)
	if _, err := os.Stat(a1.Sandbox.TempDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TMPDIR %s after release: %v", a1.Sandbox.TempDir, err)
	}
	_ = m.ReleaseSession(context.Background(), "a")
	waitDead(t, helperA)
	if !alive(helperB) {
		t.Error("session b's helper died with session a's")
	}
	mustRelease(t, m, b1)
}

// A helper that dies takes its running commands along, their terminals
// end (with an unknown status) instead of hanging, and the next create
// starts a new helper.
func TestSandboxSpawnerDies(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, &Options{Policy: &Policy{Sandbox: &sandbox.Policy{Mode: sandbox.ReadOnly}}})
	info := mustCreate(t, m, Request{Command: "sleep 100"})
	helper := parentPID(t, info.PID)
	if err := unix.Kill(helper, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{})
	waitDead(t, info.PID)
	mustRelease(t, m, info)
	out, st := runTerminal(t, m, Request{Command: "echo again"})
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	if out.Text != "again\n" {
		t.Errorf("output after a new helper: %q", out.Text)
	}
}

// A manager whose policy already says what commands may write starts its
// first session's helper with itself: that session's commands run in it,
// another session gets one of its own, and Close stops a helper that no
// command used.
func TestSandboxSpareHelper(t *testing.T) {
	// Not parallel: it tells the spare helper from others by being the
	// only new child of this process.
	pol := &Policy{Sandbox: &sandbox.Policy{Mode: sandbox.ReadOnly}}
	spare := func(m *Manager, before map[int]bool) int {
		t.Helper()
		slot := m.iso.spare
		if slot == nil {
			t.Fatal("no helper started with the manager")
		}
		<-slot.ready
		if slot.err != nil {
			t.Fatal(slot.err)
		}
		var pids []int
		for pid := range helperChildren(t) {
			if !before[pid] {
				pids = append(pids, pid)
			}
		}
		if len(pids) != 1 {
			t.Fatalf("new helpers %v, want one", pids)
		}
		return pids[0]
	}

	before := helperChildren(t)
	m := newTestManager(t, &Options{Policy: pol})
	helper := spare(m, before)
	a := mustCreate(t, m, Request{SessionID: "a", Command: "exec sleep 100"})
	b := mustCreate(t, m, Request{SessionID: "b", Command: "exec sleep 100"})
	if got := parentPID(t, a.PID); got != helper {
		t.Errorf("first session's command runs in %d, want the spare helper %d", got, helper)
	}
	if got := parentPID(t, b.PID); got == helper {
		t.Errorf("second session's command runs in the first session's helper %d", got)
	}
	for _, info := range []Info{a, b} {
		if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
			t.Fatal(err)
		}
		mustWait(t, m, info)
		mustRelease(t, m, info)
	}

	before = helperChildren(t)
	unused := NewManager(&Options{DefaultCwd: t.TempDir(), Policy: pol})
	helper = spare(unused, before)
	if err := unused.Close(); err != nil {
		t.Fatal(err)
	}
	waitDead(t, helper)

	// Closed at once, the manager abandons the helper's start rather than
	// wait for it to be ready (unless it won the race), and leaves nothing.
	before = helperChildren(t)
	closed := NewManager(&Options{DefaultCwd: t.TempDir(), Policy: pol})
	slot := closed.iso.spare
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	<-slot.ready
	if slot.err != nil && !errors.Is(slot.err, context.Canceled) {
		t.Errorf("abandoned helper: %v, want context.Canceled", slot.err)
	}
	for pid := range helperChildren(t) {
		if !before[pid] {
			t.Errorf("helper %d left after Close", pid)
		}
	}
}

// helperChildren lists the sandbox helpers this process started (and has
// not reaped): children running /proc/self/exe.
func helperChildren(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		comm := b[bytes.IndexByte(b, '(')+1 : bytes.LastIndexByte(b, ')')]
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if string(comm) == "exe" && len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && f[0] != "Z" {
			pids[pid] = true
		}
	}
	return pids
}
