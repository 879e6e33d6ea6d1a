package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/internal/owner"
	"golang.org/x/sys/unix"
)

// A Spawner is one sandbox helper that stays up and starts commands,
// already confined, so that each command costs a fork and exec instead of
// starting the host binary again (see Policy.NewSpawner).
//
// The protocol, over a unix stream socketpair that only the host and the
// helper hold (close-on-exec on both sides, never inherited by commands):
// frames of a 4-byte big-endian length and a JSON object. The host sends
// {"op":"start",…} with the command's descriptors attached (SCM_RIGHTS,
// on the frame's bytes) and {"op":"reap","pid":N} when it has released a
// command; the helper sends {"op":"ready"} or {"op":"fail"} once set up,
// {"op":"started","id":…} with the pid or the errno of each start, and
// {"op":"exited","pid":…} with the status of each command, which it does
// not reap until told to. The host reads in one goroutine that never
// blocks on anything else, so the helper's writes always drain.
type Spawner struct {
	applied  Applied // what every command gets; TempDir is per command
	tmpRoot  string  // parent of the commands' TMPDIRs, writable under Landlock
	ownRoot  bool
	confined bool // mode is not Off: each command gets a TMPDIR

	cmd  *exec.Cmd
	conn *net.UnixConn
	wmu  sync.Mutex // one frame at a time

	mu       sync.Mutex
	nextID   uint64
	pending  map[uint64]*Child // starts not yet answered
	children map[int]*Child    // started, not released
	closing  bool
	deadErr  error
	dead     chan struct{} // closed when the helper is gone or unusable

	ready      chan error
	readerDone chan struct{}
	closeOnce  sync.Once

	replyTimeout time.Duration // ReplyTimeout; tests shorten it
}

// A Child is a command started by a Spawner. Its parent is the helper, so
// the host learns its exit status from the helper; it watches the process
// itself through a pidfd, so that a helper that stops answering cannot
// make Wait hang.
type Child struct {
	// Pid is the command's process ID; with Cmd.Setpgid also its process
	// group ID.
	Pid int

	s        *Spawner
	applied  *Applied
	tmp      string
	started  chan struct{} // Pid or startErr is set
	startErr error

	done   chan struct{} // status is set
	status ExitStatus

	mu       sync.Mutex
	pidfd    int // -1 when the kernel has no pidfds
	released bool
}

// Wire messages. Descriptor fields index the descriptors that came with
// the frame; -1 means none.
type request struct {
	Op        string   `json:"op"`
	ID        uint64   `json:"id,omitempty"`
	Pid       int      `json:"pid,omitempty"`
	Path      string   `json:"path,omitempty"`
	Args      []string `json:"args,omitempty"`
	Env       []string `json:"env,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Setpgid   bool     `json:"setpgid,omitempty"`
	Pdeathsig int      `json:"pdeathsig,omitempty"`
	NFD       int      `json:"nfd,omitempty"`
	Stdin     int      `json:"stdin"`
	Stdout    int      `json:"stdout"`
	Stderr    int      `json:"stderr"`
	Cgroup    int      `json:"cgroup"`
}

type reply struct {
	Op     string `json:"op"`
	ID     uint64 `json:"id,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	Errno  int    `json:"errno,omitempty"`
	Err    string `json:"err,omitempty"`
	Code   int    `json:"code,omitempty"`
	Signal int    `json:"signal,omitempty"`
}

// maxFrame bounds a frame: argv and environment together are limited by
// the kernel to far less (ARG_MAX).
const maxFrame = 16 << 20

// maxFDs is the most descriptors one request carries.
const maxFDs = 4

func appendFrame(b, msg []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
	return append(b, msg...)
}

// frameReader splits the byte stream into frames and keeps descriptors
// in arrival order. The kernel hands descriptors over with the first
// byte of the frame they were sent with, never later, so a frame's
// descriptors are at the head of the queue when the frame is complete.
type frameReader struct {
	data []byte
	fds  []int
}

func (fr *frameReader) addRights(oob []byte) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return err
	}
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return err
		}
		fr.fds = append(fr.fds, fds...)
	}
	return nil
}

func (fr *frameReader) next() (msg []byte, ok bool, err error) {
	if len(fr.data) < 4 {
		return nil, false, nil
	}
	n := binary.BigEndian.Uint32(fr.data)
	if n > maxFrame {
		return nil, false, fmt.Errorf("frame of %d bytes", n)
	}
	if len(fr.data) < 4+int(n) {
		return nil, false, nil
	}
	msg = fr.data[4 : 4+n]
	fr.data = fr.data[4+n:]
	return msg, true, nil
}

func (fr *frameReader) take(n int) ([]int, bool) {
	if n < 0 || n > maxFDs || n > len(fr.fds) {
		return nil, false
	}
	fds := fr.fds[:n:n]
	fr.fds = fr.fds[n:]
	return fds, true
}

func (fr *frameReader) closeAll() {
	closeAll(fr.fds)
	fr.fds = nil
}

// NewSpawner starts a helper that confines itself once as p says (the
// namespaces, the read-only .git mounts, Landlock) and then starts
// commands on request: each costs a fork and exec, not a start of the host
// binary. It fails like Wrap when p cannot be enforced, needs Init, and
// fails with an error wrapping ErrSpawnerDead when the helper does not
// start.
//
// What the commands of one Spawner share, unlike commands wrapped one by
// one: the Landlock domain (with ABI 6 they may signal each other and the
// helper, though not the host), the network namespace (with DenyNetwork
// they reach each other on their loopback), the mount namespace, and a
// temporary root under which each command gets its own TMPDIR (writable
// by all of them). Give each session, or each trust domain, its own.
//
// The helper is tied to the host's thread with Pdeathsig, and its
// commands to the helper with Cmd.Pdeathsig: when it dies, they do. Close
// stops it.
func (p *Policy) NewSpawner() (*Spawner, error) {
	if !initCalled.Load() {
		return nil, ErrNoInit
	}
	pr, err := p.prepare()
	if err != nil {
		return nil, err
	}
	if len(pr.missing) > 0 && !p.BestEffort {
		return nil, unsupported(pr.missing)
	}
	s := &Spawner{
		applied:    pr.applied,
		confined:   p.Mode != Off,
		pending:    map[uint64]*Child{},
		children:   map[int]*Child{},
		dead:       make(chan struct{}),
		ready:      make(chan error, 1),
		readerDone: make(chan struct{}),

		replyTimeout: ReplyTimeout,
	}
	pl := pr.pl
	pl.Serve = true
	if s.confined {
		root := p.TempDir
		if root == "" {
			if root, err = owner.TempDir("sandbox"); err != nil {
				return nil, fmt.Errorf("sandbox: creating the temporary root: %w", err)
			}
			s.ownRoot = true
		} else if !filepath.IsAbs(root) {
			return nil, fmt.Errorf("sandbox: TempDir %q is not absolute", root)
		}
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			s.removeRoot()
			return nil, fmt.Errorf("sandbox: TempDir: %w", err)
		}
		s.tmpRoot = real
		if pl.FS {
			pl.Dirs = append(pl.Dirs, real)
			s.applied.Writable = append(s.applied.Writable, real)
		}
	}
	s.applied.Shared = true
	if err := s.startHelper(&pl, pr.nsFlags); err != nil {
		s.removeRoot()
		return nil, err
	}
	return s, nil
}

func (s *Spawner) startHelper(pl *plan, nsFlags uintptr) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox: socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "spawner"), os.NewFile(uintptr(fds[1]), "spawner-helper")
	defer theirs.Close()
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return fmt.Errorf("sandbox: spawner socket: %w", err)
	}
	s.conn = c.(*net.UnixConn)
	js, err := json.Marshal(pl)
	if err != nil {
		s.conn.Close()
		return fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"acpterm-sandbox-spawner"}
	cmd.Env = []string{planEnv + "=" + string(js)}
	cmd.ExtraFiles = []*os.File{theirs} // fd 3: spawnerFD
	// Its own process group, out of reach of the host's group kills; a
	// host that dies takes it along (and it its commands).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if nsFlags != 0 {
		pl.DropCaps = setUserNamespace(cmd.SysProcAttr, nsFlags)
		if js, err = json.Marshal(pl); err != nil {
			s.conn.Close()
			return fmt.Errorf("sandbox: %w", err)
		}
		cmd.Env = []string{planEnv + "=" + string(js)}
	}
	if err := cmd.Start(); err != nil {
		s.conn.Close()
		return fmt.Errorf("%w: starting it: %v", ErrSpawnerDead, err)
	}
	s.cmd = cmd
	go s.readLoop()
	tm := time.NewTimer(s.replyTimeout)
	defer tm.Stop()
	select {
	case err = <-s.ready:
	case <-tm.C:
		err = errors.New("no answer")
	}
	if err != nil {
		s.kill(err)
		s.Close()
		return fmt.Errorf("%w: it did not start: %v", ErrSpawnerDead, err)
	}
	return nil
}

// readLoop dispatches the helper's messages until the socket closes. It
// must never block on anything but the socket.
func (s *Spawner) readLoop() {
	defer close(s.readerDone)
	r := bufio.NewReader(s.conn)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			s.kill(err)
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			s.kill(fmt.Errorf("frame of %d bytes", n))
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			s.kill(err)
			return
		}
		var rep reply
		if err := json.Unmarshal(b, &rep); err != nil {
			s.kill(fmt.Errorf("bad message: %w", err))
			return
		}
		if err := s.dispatch(&rep); err != nil {
			s.kill(err)
			return
		}
	}
}

func (s *Spawner) dispatch(rep *reply) error {
	switch rep.Op {
	case "ready", "fail":
		var err error
		if rep.Op == "fail" {
			err = errors.New(rep.Err)
		}
		select {
		case s.ready <- err:
		default:
			return errors.New("second ready message")
		}
	case "started":
		s.mu.Lock()
		c := s.pending[rep.ID]
		delete(s.pending, rep.ID)
		s.mu.Unlock()
		if c == nil {
			return fmt.Errorf("answer to unknown request %d", rep.ID)
		}
		if rep.Pid <= 0 {
			err := error(syscall.Errno(rep.Errno))
			if rep.Errno == 0 {
				err = errors.New(rep.Err)
			}
			c.startErr = &os.PathError{Op: "fork/exec", Path: "", Err: err}
			close(c.started)
			return nil
		}
		if err := s.adopt(c, rep.Pid); err != nil {
			c.startErr = err
			close(c.started)
			return err
		}
		close(c.started)
	case "exited":
		s.mu.Lock()
		c := s.children[rep.Pid]
		s.mu.Unlock()
		if c == nil {
			return fmt.Errorf("exit of unknown pid %d", rep.Pid)
		}
		select {
		case <-c.done:
			return fmt.Errorf("second exit of pid %d", rep.Pid)
		default:
		}
		c.status = ExitStatus{Code: rep.Code, Signal: syscall.Signal(rep.Signal)}
		close(c.done)
	default:
		return fmt.Errorf("unknown message %q", rep.Op)
	}
	return nil
}

// adopt registers a started command. It checks that pid is the helper's
// child, so that not even a subverted helper can have the host signal a
// process that is not sandboxed, and pins the process with a pidfd.
func (s *Spawner) adopt(c *Child, pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil && err != unix.ENOSYS {
		return fmt.Errorf("pidfd_open(%d): %w", pid, err)
	}
	if err == nil {
		unix.CloseOnExec(fd)
	} else {
		fd = -1
	}
	if ppid, err := parentOf(pid); err != nil || ppid != s.cmd.Process.Pid {
		if fd >= 0 {
			unix.Close(fd)
		}
		return fmt.Errorf("pid %d is not the helper's child (parent %d, %v)", pid, ppid, err)
	}
	c.Pid, c.pidfd = pid, fd
	s.mu.Lock()
	s.children[pid] = c
	s.mu.Unlock()
	return nil
}

// parentOf reads the parent PID from /proc/PID/stat.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold anything, parentheses included.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[1])
}

// kill marks the helper unusable with err (the first reason wins), fails
// pending starts, kills the process groups of the commands that are
// still running (Pdeathsig reaches only their leaders), and kills the
// helper.
func (s *Spawner) kill(err error) {
	s.mu.Lock()
	if s.deadErr != nil {
		s.mu.Unlock()
		return
	}
	if s.closing {
		err = errors.New("closed")
	}
	s.deadErr = fmt.Errorf("%w: %v", ErrSpawnerDead, err)
	close(s.dead)
	pending := s.pending
	s.pending = map[uint64]*Child{}
	var running []*Child
	for _, c := range s.children {
		select {
		case <-c.done:
		default:
			running = append(running, c)
		}
	}
	s.mu.Unlock()
	for _, c := range pending {
		c.startErr = s.deadErr
		close(c.started)
	}
	for _, c := range running {
		// The leader is not reaped until the host releases it, or until
		// the helper's death reparents it: its number still names the
		// group here.
		_ = unix.Kill(-c.Pid, unix.SIGKILL)
		c.signal(unix.SIGKILL)
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	select {
	case s.ready <- err: // a start that is waiting for ready
	default:
	}
}

func (s *Spawner) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadErr
}

// Applied is what every command of the spawner gets (with TempDir "":
// each command's is in its Child.Applied). Shared is set.
func (s *Spawner) Applied() *Applied {
	a := s.applied
	return &a
}

// Start starts c in the sandbox and returns once it runs (or failed to
// exec: the error is then the exec's, a *os.PathError holding the errno,
// as from exec.Cmd.Start). In a mode other than Off the command gets a
// private TMPDIR, removed by Release. A helper that is gone or does not
// answer within ReplyTimeout gives an error wrapping ErrSpawnerDead; the
// helper is then killed, with every command it started.
func (s *Spawner) Start(c *Cmd) (*Child, error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	if c.Path == "" {
		return nil, errors.New("sandbox: Cmd.Path is empty")
	}
	a := s.applied
	ch := &Child{s: s, applied: &a, pidfd: -1, started: make(chan struct{}), done: make(chan struct{})}
	env := withoutEnv(c.Env, planEnv)
	if s.confined {
		tmp, err := os.MkdirTemp(s.tmpRoot, "cmd-")
		if err != nil {
			return nil, fmt.Errorf("sandbox: creating TMPDIR: %w", err)
		}
		ch.tmp, a.TempDir = tmp, tmp
		env = append(withoutEnv(env, "TMPDIR"), "TMPDIR="+tmp)
	}
	args := c.Args
	if len(args) == 0 {
		args = []string{c.Path}
	}
	req := request{Op: "start", Path: c.Path, Args: args, Env: env, Dir: c.Dir,
		Setpgid: c.Setpgid, Pdeathsig: int(c.Pdeathsig), Stdin: -1, Stdout: -1, Stderr: -1, Cgroup: -1}
	var fds []int
	add := func(f *os.File) int {
		if f == nil {
			return -1
		}
		fds = append(fds, int(f.Fd()))
		return len(fds) - 1
	}
	req.Stdin, req.Stdout = add(c.Stdin), add(c.Stdout)
	if c.Stderr != nil && c.Stderr == c.Stdout {
		req.Stderr = req.Stdout
	} else {
		req.Stderr = add(c.Stderr)
	}
	req.Cgroup = add(c.Cgroup)
	req.NFD = len(fds)

	s.mu.Lock()
	if s.deadErr != nil {
		s.mu.Unlock()
		ch.removeTemp()
		return nil, s.deadErr
	}
	s.nextID++
	req.ID = s.nextID
	s.pending[req.ID] = ch
	s.mu.Unlock()

	deadline := time.Now().Add(s.replyTimeout)
	err := s.send(&req, fds, deadline)
	// The descriptors were duplicated into the message: ours may go.
	runtime.KeepAlive(c)
	if err != nil {
		s.kill(fmt.Errorf("sending a start: %w", err))
		ch.removeTemp()
		return nil, s.err()
	}
	tm := time.NewTimer(time.Until(deadline))
	defer tm.Stop()
	select {
	case <-ch.started:
	case <-tm.C:
		s.kill(fmt.Errorf("no answer to a start within %v", s.replyTimeout))
		<-ch.started // kill fails it, unless the answer came first
	}
	if ch.startErr != nil {
		ch.removeTemp()
		var pe *os.PathError
		if errors.As(ch.startErr, &pe) && pe.Path == "" {
			pe.Path = c.Path
		}
		return nil, ch.startErr
	}
	return ch, nil
}

// send writes one frame, with fds attached to its first bytes.
func (s *Spawner) send(req *request, fds []int, deadline time.Time) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	frame := appendFrame(nil, b)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(deadline)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n, _, err := s.conn.WriteMsgUnix(frame, oob, nil)
	if err != nil {
		return err
	}
	if n < len(frame) {
		_, err = s.conn.Write(frame[n:])
	}
	return err
}

// Close stops the helper and waits for it: it kills the commands still
// running and reaps the others, then exits; past ReplyTimeout it is
// killed. Close removes the temporary root the spawner made. It is
// idempotent and safe to call concurrently with the other methods, which
// fail with ErrSpawnerDead afterwards.
func (s *Spawner) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		// End of input: the helper handles what it has read (reaps
		// included), then cleans up and exits, which ends readLoop.
		_ = s.conn.CloseWrite()
		tm := time.NewTimer(s.replyTimeout)
		select {
		case <-s.readerDone:
		case <-tm.C:
			s.kill(errors.New("did not exit"))
			<-s.readerDone
		}
		tm.Stop()
		s.kill(errors.New("closed"))
		_ = s.cmd.Wait()
		_ = s.conn.Close()
		s.removeRoot()
	})
	return nil
}

func (s *Spawner) removeRoot() {
	if s.ownRoot && s.tmpRoot != "" {
		_ = os.RemoveAll(s.tmpRoot)
	}
}

// Applied is what confines the command: the spawner's Applied with the
// command's TempDir.
func (c *Child) Applied() *Applied { return c.applied }

// Wait waits for the command to exit and returns its status. It waits
// for the process through its pidfd and then for the helper's report; a
// helper that died, or does not report within ReplyTimeout, gives an
// error wrapping ErrSpawnerDead (the status is then unknown). Any number
// of goroutines may wait.
func (c *Child) Wait() (ExitStatus, error) {
	if c.pidfd >= 0 {
		// Not under c.mu: Release, which closes the fd, comes after Wait.
		fds := []unix.PollFd{{Fd: int32(c.pidfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				break
			}
		}
		select {
		case <-c.done:
			return c.status, nil
		default:
		}
		tm := time.NewTimer(c.s.replyTimeout)
		defer tm.Stop()
		select {
		case <-c.done:
		case <-c.s.dead:
		case <-tm.C:
			c.s.kill(fmt.Errorf("no exit report for pid %d within %v of its exit", c.Pid, c.s.replyTimeout))
		}
	} else {
		select {
		case <-c.done:
		case <-c.s.dead:
		}
	}
	select {
	case <-c.done:
		return c.status, nil
	default:
		return ExitStatus{}, fmt.Errorf("waiting for pid %d: %w", c.Pid, c.s.err())
	}
}

// Done is closed when the helper has reported the command's exit.
func (c *Child) Done() <-chan struct{} { return c.done }

// Signal sends sig to the command and, with group, to its process group
// (for a command started with Setpgid). The group is signalled only while
// the helper is alive: it keeps the leader unreaped until Release, which
// keeps the group's number from being reused.
func (c *Child) Signal(sig syscall.Signal, group bool) {
	if group {
		select {
		case <-c.s.dead:
		default:
			c.mu.Lock()
			if !c.released {
				_ = unix.Kill(-c.Pid, sig)
			}
			c.mu.Unlock()
		}
	}
	c.signal(sig)
}

// signal sends sig to the command alone, through its pidfd.
func (c *Child) signal(sig syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return
	}
	if c.pidfd >= 0 {
		_ = unix.PidfdSendSignal(c.pidfd, sig, nil, 0)
		return
	}
	select {
	case <-c.s.dead:
	default:
		_ = unix.Kill(c.Pid, sig)
	}
}

// Release lets the helper reap the command, which must have exited
// (call it after Wait), and removes the command's TMPDIR. It is
// idempotent.
func (c *Child) Release() error {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		return nil
	}
	c.released = true
	if c.pidfd >= 0 {
		_ = unix.Close(c.pidfd)
		c.pidfd = -1
	}
	c.mu.Unlock()
	s := c.s
	s.mu.Lock()
	delete(s.children, c.Pid)
	s.mu.Unlock()
	var err error
	if s.err() == nil {
		if err = s.send(&request{Op: "reap", Pid: c.Pid, Stdin: -1, Stdout: -1, Stderr: -1, Cgroup: -1}, nil, time.Now().Add(s.replyTimeout)); err != nil {
			s.kill(fmt.Errorf("sending a reap: %w", err))
		}
	}
	if rerr := c.removeTemp(); err == nil {
		err = rerr
	}
	return err
}

func (c *Child) removeTemp() error {
	if c.tmp == "" {
		return nil
	}
	tmp := c.tmp
	c.tmp = ""
	return os.RemoveAll(tmp)
}
