//go:build linux

package terminal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// proc is one started command.
type proc struct {
	cmd    *exec.Cmd
	cgroup string // the terminal's own cgroup directory, "" when not in one
	scan   bool   // find escaped descendants by marker at sweep time
	marker string
}

// isolator holds the manager's cgroup and batches /proc scans.
type isolator struct {
	logf func(string, ...any)
	cur  atomic.Int32 // Isolation in use; drops from cgroup to procscan on failure
	dir  string       // the manager's cgroup directory (IsolationCgroup)

	scanMu   sync.Mutex
	scanning bool
	pending  map[string][]chan struct{} // marker -> sweepers waiting for it
}

func newIsolator(c *config) *isolator {
	iso := &isolator{logf: c.logf, pending: map[string][]chan struct{}{}}
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
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
}

func (iso *isolator) start(s *spawnSpec) (*proc, error) {
	p := &proc{marker: s.marker}
	if iso.mode() == IsolationCgroup {
		if err := iso.startInCgroup(p, s); err == nil {
			return p, nil
		} else if p.cmd != nil {
			return nil, err // not the cgroup's fault
		}
	}
	p.scan = iso.mode() != IsolationGroup
	p.cmd = newCmd(s)
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// startInCgroup starts the command directly inside a new cgroup, so that
// not even its first fork can escape. On a cgroup failure it falls back
// and returns an error with p.cmd nil; when the command itself cannot
// start, p.cmd is set and the error is the command's.
func (iso *isolator) startInCgroup(p *proc, s *spawnSpec) error {
	dir := filepath.Join(iso.dir, s.id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		iso.fallback(err)
		return err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		iso.fallback(err)
		return err
	}
	cmd := newCmd(s)
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	err = cmd.Start()
	_ = unix.Close(fd)
	if err == nil {
		p.cmd, p.cgroup = cmd, dir
		return nil
	}
	_ = unix.Rmdir(dir)
	// clone3 into a cgroup can fail where a plain start works (old kernel,
	// a parent with controllers enabled, …). Try once without it.
	cmd2 := newCmd(s)
	if err2 := cmd2.Start(); err2 != nil {
		p.cmd = cmd2
		return err2
	}
	iso.fallback(err)
	p.cmd, p.scan = cmd2, true
	return nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

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
	var info unix.Siginfo
	for {
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

// terminate sends SIGTERM to the process group and, in a cgroup, to every
// member (descendants that called setsid get the same chance to clean up).
func (p *proc) terminate() {
	signalGroup(p.pid(), unix.SIGTERM)
	if p.cgroup == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(p.cgroup, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = unix.Kill(pid, unix.SIGTERM)
		}
	}
}

// kill sends SIGKILL to the process group and to the whole cgroup.
func (p *proc) kill() {
	signalGroup(p.pid(), unix.SIGKILL)
	if p.cgroup != "" {
		_ = os.WriteFile(filepath.Join(p.cgroup, "cgroup.kill"), []byte("1"), 0)
	}
}

// release reaps the command's process and removes its cgroup.
func (p *proc) release(logf func(string, ...any)) {
	_ = p.cmd.Wait()
	if p.cgroup != "" {
		if err := removeCgroup(p.cgroup); err != nil {
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
	if iso.dir != "" {
		if err := removeCgroup(iso.dir); err != nil {
			iso.logf("terminal: removing cgroup %s: %v", iso.dir, err)
		}
	}
}

// removeCgroup removes a cgroup directory whose members were killed. They
// leave the cgroup asynchronously, so while rmdir fails with EBUSY it
// waits, for a bounded time, for cgroup.events to say the cgroup is no
// longer populated.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(cgroupEmptyTimeout)
	empty := false // cgroup.events said unpopulated before this rmdir
	for {
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || empty {
			// Busy without members means child cgroups, which waiting
			// will not remove.
			return err
		}
		waited, err := waitUnpopulated(dir, deadline)
		if err != nil {
			return fmt.Errorf("%w (%w)", unix.EBUSY, err)
		}
		empty = !waited
	}
}

// cgroupEmptyTimeout bounds the wait for killed members to leave a
// cgroup; SIGKILL takes effect in microseconds unless a process is stuck
// in the kernel (uninterruptible I/O).
const cgroupEmptyTimeout = 5 * time.Second

// waitUnpopulated waits until cgroup dir has no process in it or deadline
// passes, and reports whether it had any to wait for. The kernel signals a
// change of cgroup.events to poll(2) as POLLPRI, so this sleeps until the
// members are gone rather than polling.
func waitUnpopulated(dir string, deadline time.Time) (waited bool, err error) {
	fd, err := unix.Open(filepath.Join(dir, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return true, nil // removed meanwhile: let rmdir say so
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 256)
	for {
		// Reading arms the notification: poll reports only changes made
		// after the last read.
		n, err := unix.Pread(fd, buf, 0)
		if err != nil {
			return waited, err
		}
		busy, ok := populated(buf[:n])
		if !ok {
			return waited, fmt.Errorf("no populated key in %q", buf[:n])
		}
		if !busy {
			return waited, nil
		}
		waited = true
		left := time.Until(deadline)
		if left <= 0 {
			return waited, errors.New("members still running after " + cgroupEmptyTimeout.String())
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(left.Milliseconds())+1); err != nil && err != unix.EINTR {
			return waited, err
		}
	}
}

// populated reads the "populated" key of a cgroup.events file: 1 while
// the cgroup or any of its descendants has a live process.
func populated(events []byte) (busy, ok bool) {
	for line := range strings.SplitSeq(string(events), "\n") {
		if v, found := strings.CutPrefix(line, "populated "); found {
			return strings.TrimSpace(v) != "0", true
		}
	}
	return false, false
}

// makeManagerCgroup creates the manager's cgroup under parent (default:
// the current process's cgroup) and checks it supports cgroup.kill.
func makeManagerCgroup(parent string) (string, error) {
	if parent == "" {
		var err error
		if parent, err = ownCgroupDir(); err != nil {
			return "", err
		}
	}
	cleanStaleCgroups(parent)
	dir := filepath.Join(parent, fmt.Sprintf("acpterm-%d-%s", os.Getpid(), randomHex(4)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = unix.Rmdir(dir)
		return "", fmt.Errorf("no cgroup.kill (Linux < 5.14?): %w", err)
	}
	return dir, nil
}

// cleanStaleCgroups kills and removes what managers of processes that
// died without closing left under parent.
func cleanStaleCgroups(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "acpterm-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				sub := filepath.Join(dir, s.Name())
				_ = os.WriteFile(filepath.Join(sub, "cgroup.kill"), []byte("1"), 0)
				_ = removeCgroup(sub)
			}
		}
		_ = removeCgroup(dir)
	}
}

// ownCgroupDir finds the directory of the current process's cgroup in the
// cgroup v2 hierarchy.
func ownCgroupDir() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var rel string
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
			break
		}
	}
	if !found {
		return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
	}
	mnt, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	rel = strings.TrimSuffix(rel, " (deleted)")
	if root != "/" {
		r, ok := strings.CutPrefix(rel, root)
		if !ok {
			return "", fmt.Errorf("cgroup %s is outside the mounted root %s", rel, root)
		}
		rel = r
	}
	return filepath.Join(mnt, rel), nil
}

// cgroup2Mount returns the mount point and root of the cgroup2 hierarchy.
func cgroup2Mount() (mountPoint, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options [optional…] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) == 0 || fs[0] != "cgroup2" {
			continue
		}
		fs := strings.Fields(pre)
		if len(fs) < 5 {
			continue
		}
		return unescapeMount(fs[4]), unescapeMount(fs[3]), nil
	}
	if err := sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", errors.New("no cgroup2 mount")
}

// unescapeMount undoes the octal escapes (\040 for space, …) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

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
