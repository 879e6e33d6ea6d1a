//go:build linux

package terminal

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/acpterm/acpterm/internal/cgroup"
	"github.com/acpterm/acpterm/sandbox"
	"golang.org/x/sys/unix"
)

// proc is one started command.
type proc struct {
	cmd    *exec.Cmd      // started by the manager, directly or wrapped
	child  *sandbox.Child // or started by a sandbox spawner
	cgroup string         // the terminal's own cgroup directory, "" when not in one
	scan   bool           // find escaped descendants by marker at sweep time
	marker string
}

// isolator holds the manager's cgroup, batches /proc scans and keeps the
// sandbox spawners.
type isolator struct {
	logf func(string, ...any)
	cur  atomic.Int32 // Isolation in use; drops from cgroup to procscan on failure
	dir  string       // the manager's cgroup directory (IsolationCgroup)

	scanMu   sync.Mutex
	scanning bool
	pending  map[string][]chan struct{} // marker -> sweepers waiting for it

	spawnMu   sync.Mutex
	spawners  map[string]*spawnerSlot // by session and policy (spawnerKey)
	closed    bool
	noSpawner bool // tests and benchmarks: wrap every command
}

// spawnerSlot is one sandbox helper, started by the first command that
// needs it; ready is closed once sp or err is set.
type spawnerSlot struct {
	ready chan struct{}
	sp    *sandbox.Spawner
	err   error
}

// maxSpawners bounds the sandbox helpers of a manager: a session whose
// commands ask for many different Writable sets (a cwd each, without
// roots) gets one helper per set, and past the bound commands are wrapped
// one by one instead.
const maxSpawners = 32

func newIsolator(c *config) *isolator {
	iso := &isolator{logf: c.logf, pending: map[string][]chan struct{}{}, spawners: map[string]*spawnerSlot{}}
	mode := c.isolation
	if mode == IsolationAuto || mode == IsolationCgroup {
		dir, err := makeManagerCgroup(c.cgroupParent)
		if err == nil {
			iso.dir = dir
			mode = IsolationCgroup
		} else {
			if c.isolation == IsolationCgroup {
				c.logf("terminal: cgroup isolation unavailable, using /proc scan: %v", err)
			}
			mode = IsolationProcScan
		}
	}
	iso.cur.Store(int32(mode))
	return iso
}

func (iso *isolator) mode() Isolation { return Isolation(iso.cur.Load()) }

// fallback stops using cgroups for new terminals.
func (iso *isolator) fallback(err error) {
	if iso.cur.CompareAndSwap(int32(IsolationCgroup), int32(IsolationProcScan)) {
		iso.logf("terminal: cgroup isolation failed, using /proc scan from now on: %v", err)
	}
}

func newCmd(s *spawnSpec) *exec.Cmd {
	return &exec.Cmd{
		Path:   s.path,
		Args:   s.argv,
		Env:    s.env,
		Dir:    s.dir,
		Stdin:  s.stdin,
		Stdout: s.stdout,
		Stderr: s.stdout,
		// Its own process group, so that signals reach its children.
		// Pdeathsig: a host that is SIGKILLed takes the command down with
		// it; what the command started is left to the cgroup, which the
		// next host removes as stale. The signal fires when the forking
		// OS thread exits (golang/go#27505), which the runtime does only
		// for a goroutine that exits locked to its thread: never start
		// terminals from such a goroutine.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
}

func (iso *isolator) start(s *spawnSpec) (*proc, error) {
	p := &proc{marker: s.marker}
	if iso.mode() == IsolationCgroup {
		if err, fatal := iso.startInCgroup(p, s); err == nil {
			return p, nil
		} else if fatal {
			return nil, err // not the cgroup's fault
		}
	}
	p.scan = iso.mode() != IsolationGroup
	if err := iso.launch(p, s, ""); err != nil {
		return nil, err
	}
	return p, nil
}

// startInCgroup starts the command directly inside a new cgroup, so that
// not even its first fork can escape. On a cgroup failure it falls back
// and returns the error; when the command itself cannot start, fatal is
// set and the error is the command's.
func (iso *isolator) startInCgroup(p *proc, s *spawnSpec) (err error, fatal bool) {
	dir := filepath.Join(iso.dir, s.id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		iso.fallback(err)
		return err, false
	}
	err = iso.launch(p, s, dir)
	if err == nil {
		p.cgroup = dir
		return nil, false
	}
	_ = unix.Rmdir(dir)
	var se *sandboxError
	if errors.As(err, &se) {
		return err, true
	}
	// clone3 into a cgroup can fail where a plain start works (old kernel,
	// a parent with controllers enabled, …). Try once without it.
	if err2 := iso.launch(p, s, ""); err2 != nil {
		return err2, true
	}
	iso.fallback(err)
	p.scan = true
	return nil, false
}

// launch starts the command, in the cgroup directory cg unless cg is "":
// through the session's sandbox spawner when the command is sandboxed,
// else (or when no spawner can be had) wrapped and started here.
func (iso *isolator) launch(p *proc, s *spawnSpec, cg string) error {
	if sp := s.sandbox; sp != nil && (sp.Mode != sandbox.Off || sp.Network != sandbox.AllowNetwork) {
		err := iso.spawn(p, s, cg)
		if err == nil || !errors.Is(err, errNoSpawner) {
			return err
		}
	}
	cmd := newCmd(s)
	// Wrap keeps SysProcAttr, to which cgroup.Start adds the cgroup.
	if err := s.wrap(cmd); err != nil {
		return err
	}
	var err error
	if cg != "" {
		err = cgroup.Start(cmd, cg)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return err
	}
	p.cmd = cmd
	return nil
}

// errNoSpawner: no spawner could be had for the command, which is then
// wrapped instead.
var errNoSpawner = errors.New("no sandbox spawner")

// spawn starts the command through the spawner of its session and policy.
// A helper that died or stopped answering is replaced once; failing that,
// or when the spawner cannot start, it returns errNoSpawner. A policy the
// kernel cannot enforce is a *sandboxError, as from Wrap.
func (iso *isolator) spawn(p *proc, s *spawnSpec, cg string) error {
	key := spawnerKey(s)
	for attempt := 0; attempt < 2; attempt++ {
		slot, err := iso.spawner(key, s.sandbox)
		switch {
		case err == nil:
		case errors.Is(err, errNoSpawner):
			return err
		case errors.Is(err, sandbox.ErrSpawnerDead):
			iso.logf("terminal: sandbox spawner unavailable, wrapping the command instead: %v", err)
			return errNoSpawner
		default:
			// The policy cannot be enforced (or is wrong), as Wrap would say.
			return &sandboxError{err}
		}
		var cgf *os.File
		if cg != "" {
			if cgf, err = os.Open(cg); err != nil {
				return err
			}
		}
		child, err := slot.sp.Start(&sandbox.Cmd{
			Path: s.path, Args: s.argv, Env: s.env, Dir: s.dir,
			Stdin: s.stdin, Stdout: s.stdout, Stderr: s.stdout,
			// As newCmd: a process group of its own; Pdeathsig ties it to
			// the helper, which is tied to this host.
			Setpgid: true, Pdeathsig: syscall.SIGKILL,
			Cgroup: cgf,
		})
		if cgf != nil {
			cgf.Close()
		}
		if err == nil {
			p.child = child
			s.applied = child.Applied()
			return nil
		}
		if !errors.Is(err, sandbox.ErrSpawnerDead) {
			return err // the command's own failure (exec, cgroup)
		}
		iso.logf("terminal: sandbox spawner for session %q failed, restarting it: %v", s.session, err)
		iso.dropSpawner(key, slot)
	}
	return errNoSpawner
}

// spawnerKey names the spawner a command can use: one per session (its
// commands share a helper, and nothing with other sessions') and per
// Writable set, which the helper's Landlock rules fix.
func spawnerKey(s *spawnSpec) string {
	return s.session + "\x00" + strings.Join(s.sandbox.Writable, "\x00")
}

// spawner returns the spawner for key, starting it on first use. Starts
// for one key wait for the first; other keys do not.
func (iso *isolator) spawner(key string, pol *sandbox.Policy) (*spawnerSlot, error) {
	iso.spawnMu.Lock()
	if iso.closed || iso.noSpawner {
		iso.spawnMu.Unlock()
		return nil, errNoSpawner
	}
	slot := iso.spawners[key]
	if slot == nil {
		if len(iso.spawners) >= maxSpawners {
			iso.spawnMu.Unlock()
			return nil, errNoSpawner
		}
		slot = &spawnerSlot{ready: make(chan struct{})}
		iso.spawners[key] = slot
		iso.spawnMu.Unlock()
		sp := *pol
		sp.TempDir = "" // the spawner makes the root of its commands' TMPDIRs
		slot.sp, slot.err = sp.NewSpawner()
		close(slot.ready)
		if slot.err != nil {
			iso.dropSpawner(key, slot)
		}
	} else {
		iso.spawnMu.Unlock()
		<-slot.ready
	}
	if slot.err != nil {
		return nil, slot.err
	}
	return slot, nil
}

// dropSpawner forgets slot, if it is still the one for key, and stops it.
func (iso *isolator) dropSpawner(key string, slot *spawnerSlot) {
	iso.spawnMu.Lock()
	if iso.spawners[key] == slot {
		delete(iso.spawners, key)
	}
	iso.spawnMu.Unlock()
	if slot.sp != nil {
		_ = slot.sp.Close()
	}
}

// releaseSession stops the session's spawners; its terminals have been
// released.
func (iso *isolator) releaseSession(id string) {
	prefix := id + "\x00"
	iso.spawnMu.Lock()
	var slots []*spawnerSlot
	for key, slot := range iso.spawners {
		if strings.HasPrefix(key, prefix) {
			slots = append(slots, slot)
			delete(iso.spawners, key)
		}
	}
	iso.spawnMu.Unlock()
	closeSpawners(slots)
}

// closeSpawners stops spawners concurrently: each may take a moment to
// reap and exit.
func closeSpawners(slots []*spawnerSlot) {
	var wg sync.WaitGroup
	for _, slot := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-slot.ready
			if slot.sp != nil {
				_ = slot.sp.Close()
			}
		}()
	}
	wg.Wait()
}

func (p *proc) pid() int {
	if p.child != nil {
		return p.child.Pid
	}
	return p.cmd.Process.Pid
}

// Values of siginfo_t.si_code for SIGCHLD.
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// sigchldStatusOffset is the offset of si_status in siginfo_t: the
// preamble (si_signo, si_errno, si_code, padded to pointer alignment) then
// si_pid and si_uid.
const sigchldStatusOffset = 3*4 + (unsafe.Sizeof(uintptr(0)) - 4) + 4 + 4

// wait blocks until the command's process has exited, without reaping it.
// The zombie keeps its PID, and with it the process group ID, reserved
// until release, so signalling the group later cannot hit a stranger that
// reused the number.
func (p *proc) wait() (ExitStatus, error) {
	if p.child != nil {
		// The helper is the parent; it keeps the zombie until release
		// just the same.
		st, err := p.child.Wait()
		if err != nil {
			return ExitStatus{}, err
		}
		if st.Signal != 0 {
			return ExitStatus{Signal: signalName(st.Signal)}, nil
		}
		code := uint32(st.Code)
		return ExitStatus{ExitCode: &code}, nil
	}
	info, ok := waitPidfd(p.pid())
	for !ok {
		err := unix.Waitid(unix.P_PID, p.pid(), &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return ExitStatus{}, err
		}
	}
	status := *(*int32)(unsafe.Add(unsafe.Pointer(&info), sigchldStatusOffset))
	switch info.Code {
	case cldKilled, cldDumped:
		return ExitStatus{Signal: signalName(syscall.Signal(status))}, nil
	default:
		code := uint32(status)
		return ExitStatus{ExitCode: &code}, nil
	}
}

// waitPidfd waits, without reaping, for the child pid to exit through a
// pidfd parked in the runtime's poller, and reports false when pidfds are
// not available (Linux < 5.10 for PIDFD_NONBLOCK).
//
// Why not a blocking waitid: each one pins an OS thread for as long as
// the command runs, and the P it ran on stays with that thread until the
// runtime's monitor takes it back, which delays the goroutines starting
// commands and reading output on a busy machine (50 concurrent creates
// returned 10-15 % sooner without it; see BenchmarkConcurrent50).
func waitPidfd(pid int) (unix.Siginfo, bool) {
	var info unix.Siginfo
	// The child is not reaped before release, so pid cannot have been
	// reused by another process.
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return info, false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return info, false
	}
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			info = unix.Siginfo{}
			werr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			if werr != unix.EINTR {
				break
			}
		}
		// Still running: WNOHANG leaves info zeroed, or a non-blocking
		// pidfd says EAGAIN. The pidfd turns readable when it exits.
		return !(werr == unix.EAGAIN || werr == nil && info.Signo == 0)
	})
	return info, err == nil && werr == nil
}

// terminate sends SIGTERM to the process group and, in a cgroup, to every
// member (descendants that called setsid get the same chance to clean up).
func (p *proc) terminate() {
	p.signalGroup(unix.SIGTERM)
	if p.cgroup != "" {
		cgroup.Signal(p.cgroup, unix.SIGTERM)
	}
}

// kill sends SIGKILL to the process group and to the whole cgroup.
func (p *proc) kill() {
	p.signalGroup(unix.SIGKILL)
	if p.cgroup != "" {
		_ = cgroup.Kill(p.cgroup)
	}
}

func (p *proc) signalGroup(sig syscall.Signal) {
	if p.child != nil {
		p.child.Signal(sig, true)
		return
	}
	signalGroup(p.pid(), sig)
}

// release reaps the command's process (through its spawner, which also
// removes its TMPDIR) and removes its cgroup.
func (p *proc) release(logf func(string, ...any)) {
	if p.child != nil {
		if err := p.child.Release(); err != nil {
			logf("terminal: releasing pid %d: %v", p.child.Pid, err)
		}
	} else {
		_ = p.cmd.Wait()
	}
	if p.cgroup != "" {
		// RemoveTree: a command running as root may have made child
		// cgroups of its own.
		if err := cgroup.RemoveTree(p.cgroup); err != nil {
			logf("terminal: removing cgroup %s: %v", p.cgroup, err)
		}
	}
}

// sweep kills what may be left of released terminals: the process group
// (background jobs of a command that has exited), the cgroup, or the
// processes carrying the terminal's marker.
func (iso *isolator) sweep(ps []*proc) {
	var markers []string
	for _, p := range ps {
		p.kill()
		if p.scan {
			markers = append(markers, p.marker)
		}
	}
	if len(markers) > 0 {
		iso.scanKill(markers)
	}
}

func (iso *isolator) close() {
	iso.spawnMu.Lock()
	iso.closed = true
	slots := make([]*spawnerSlot, 0, len(iso.spawners))
	for _, slot := range iso.spawners {
		slots = append(slots, slot)
	}
	clear(iso.spawners)
	iso.spawnMu.Unlock()
	closeSpawners(slots)
	if iso.dir != "" {
		if err := cgroup.RemoveTree(iso.dir); err != nil {
			iso.logf("terminal: removing cgroup %s: %v", iso.dir, err)
		}
	}
}

// makeManagerCgroup creates the manager's cgroup under parent (default:
// the current process's cgroup), after removing those of dead hosts.
func makeManagerCgroup(parent string) (string, error) {
	return cgroup.New(parent, "terms")
}

// ownCgroupDir finds the directory of the current process's cgroup.
func ownCgroupDir() (string, error) { return cgroup.Own() }

// scanKill kills every process whose environment carries one of markers.
// Concurrent callers share scans: whoever arrives while a scan runs has
// its markers picked up by the next one.
func (iso *isolator) scanKill(markers []string) {
	done := make(chan struct{})
	iso.scanMu.Lock()
	for _, m := range markers {
		iso.pending[m] = append(iso.pending[m], done)
	}
	if iso.scanning {
		iso.scanMu.Unlock()
		<-done
		return
	}
	iso.scanning = true
	for len(iso.pending) > 0 {
		batch := iso.pending
		iso.pending = map[string][]chan struct{}{}
		iso.scanMu.Unlock()
		set := make(map[string]bool, len(batch))
		for m := range batch {
			set[m] = true
		}
		// Repeat until a pass finds nobody: a process may have forked
		// between being listed and being killed.
		for pass := 0; pass < 10 && scanProc(set) > 0; pass++ {
		}
		closed := map[chan struct{}]bool{}
		for _, chs := range batch {
			for _, ch := range chs {
				if !closed[ch] {
					closed[ch] = true
					close(ch)
				}
			}
		}
		iso.scanMu.Lock()
	}
	iso.scanning = false
	iso.scanMu.Unlock()
}

// scanProc sends SIGKILL to each live process whose environment has
// MarkerEnv set to a value in markers and returns how many it killed.
func scanProc(markers map[string]bool) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	self := os.Getpid()
	killed := 0
	buf := make([]byte, 0, 64<<10)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if buf, err = readEnviron(pid, buf); err != nil || !hasMarker(buf, markers) {
			continue
		}
		// Open a pidfd, then look again: the PID may have been reused
		// between the read and the open; the pidfd pins the process.
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if err == unix.ENOSYS && unix.Kill(pid, unix.SIGKILL) == nil {
				killed++
			}
			continue
		}
		if buf, err = readEnviron(pid, buf); err == nil && hasMarker(buf, markers) {
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				killed++
			}
		}
		_ = unix.Close(fd)
	}
	return killed
}

func readEnviron(pid int, buf []byte) ([]byte, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return buf, err
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil || n == 0 {
			return buf, nil
		}
	}
}

var markerPrefix = []byte(MarkerEnv + "=")

func hasMarker(environ []byte, markers map[string]bool) bool {
	for len(environ) > 0 {
		kv := environ
		if i := bytes.IndexByte(environ, 0); i >= 0 {
			kv, environ = environ[:i], environ[i+1:]
		} else {
			environ = nil
		}
		if v, ok := bytes.CutPrefix(kv, markerPrefix); ok && markers[string(v)] {
			return true
		}
	}
	return false
}
