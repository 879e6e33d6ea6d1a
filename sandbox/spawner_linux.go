package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/internal/proc/owner"
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
	// privatePTS: the helper mounted a devpts of its own, in which
	// OpenPTY opens terminals.
	privatePTS bool

	cmd   *exec.Cmd
	conn  *net.UnixConn
	proxy *proxyRun  // ProxyNetwork's proxy, stopped with the helper
	wmu   sync.Mutex // one frame at a time

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

	dropCred func() // ends the proxy credentials of Cmd.ProxyClient; nil without

	mu       sync.Mutex
	pidfd    int // -1 when the kernel has no pidfds
	released bool
}

// maxFrame bounds a frame: argv and environment together are limited by
// the kernel to far less (ARG_MAX).
const maxFrame = 16 << 20

// maxFDs is the most descriptors one request carries.
const maxFDs = 4

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
	return p.NewSpawnerContext(context.Background())
}

// NewSpawnerContext is NewSpawner, except that the start is abandoned,
// and the helper killed, if ctx is done before the helper is ready; the
// error then wraps ctx.Err(). Once it has returned a Spawner, ctx no
// longer matters: Close stops the helper.
func (p *Policy) NewSpawnerContext(ctx context.Context) (*Spawner, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: starting a spawner: %w", err)
	}
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
	// The helper has no controlling terminal (see startHelper).
	pl.DevTTY = pl.PrivatePTS
	s.privatePTS = pl.PrivatePTS
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
		real, err := ResolvePath(root)
		if err == nil && pl.FS {
			_, err = pl.pin(real)
		}
		if err != nil {
			s.removeRoot()
			return nil, fmt.Errorf("sandbox: TempDir: %w", err)
		}
		s.tmpRoot = real
		if pl.FS {
			s.applied.Writable = append(s.applied.Writable, real)
		}
	}
	s.applied.Shared = true
	if len(pr.reserve) > 0 {
		var mounts, lost []string
		s.applied.holds, mounts, lost = reserve(pr.reserve)
		pl.ReadOnly = append(pl.ReadOnly, mounts...)
		s.applied.Missing = append(s.applied.Missing, lost...)
	}
	if pl.ProxyPort != 0 {
		if s.proxy, err = newProxyRun(p); err != nil {
			s.removeRoot()
			return nil, err
		}
		pl.ProxyFD = spawnerFD + 1 // ExtraFiles[1]
	}
	if err := s.startHelper(ctx, &pl, pr.nsFlags); err != nil {
		s.removeRoot()
		return nil, err
	}
	return s, nil
}

func (s *Spawner) startHelper(ctx context.Context, pl *plan, nsFlags uintptr) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox: socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "spawner"), os.NewFile(uintptr(fds[1]), "spawner-helper")
	defer theirs.Close() // on the paths that return before the start
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
	cmd.Env = helperEnv(js)
	cmd.ExtraFiles = []*os.File{theirs} // fd 3: spawnerFD
	if s.proxy != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, s.proxy.theirs) // fd 4: plan.ProxyFD
	}
	// Its own session (and so process group), out of reach of the host's
	// group kills and without a controlling terminal: /dev/tty, which a
	// command on a pty of the helper's (OpenPTY) may open, is then its own
	// terminal or none (ENXIO), never the user's. A host that dies takes
	// it along (and it its commands).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if nsFlags != 0 {
		pl.DropCaps = setUserNamespace(cmd.SysProcAttr, nsFlags)
		if js, err = json.Marshal(pl); err != nil {
			s.conn.Close()
			return fmt.Errorf("sandbox: %w", err)
		}
		cmd.Env = helperEnv(js)
	}
	err = cmd.Start()
	// The helper has its copy. Ours must go now, not when this returns:
	// the reader sees the helper's end only once no copy is left.
	theirs.Close()
	if err != nil {
		s.conn.Close()
		return fmt.Errorf("%w: starting it: %v", ErrSpawnerDead, err)
	}
	s.cmd = cmd
	if s.proxy != nil {
		s.proxy.closeTheirs()
		s.proxy.start()
	}
	go s.readLoop()
	tm := time.NewTimer(s.replyTimeout)
	defer tm.Stop()
	select {
	case err = <-s.ready:
	case <-tm.C:
		err = errors.New("no answer")
	case <-ctx.Done():
		s.kill(ctx.Err())
		s.Close()
		return fmt.Errorf("sandbox: starting a spawner: %w", ctx.Err())
	}
	if err != nil {
		s.kill(err)
		s.Close()
		return fmt.Errorf("%w: it did not start: %v", ErrSpawnerDead, err)
	}
	return nil
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
	a.holds = nil // the spawner's, released by Close
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
	a.holds = nil // the spawner's
	ch := &Child{s: s, applied: &a, pidfd: -1, started: make(chan struct{}), done: make(chan struct{})}
	env := withoutEnv(c.Env, planEnv)
	if s.applied.ProxyAddr != "" {
		env = proxyEnv(env, s.applied.ProxyAddr, ch.proxyCredentials(c.ProxyClient))
	}
	if s.confined {
		tmp, err := os.MkdirTemp(s.tmpRoot, "cmd-")
		if err != nil {
			return nil, fmt.Errorf("sandbox: creating TMPDIR: %w", err)
		}
		ch.tmp, a.TempDir = tmp, tmp
		env = append(withoutEnv(env, "TMPDIR"), "TMPDIR="+tmp)
		if a.ownDirs != nil {
			env = cacheEnv(env, a.ownDirs, tmp, a.writableRoots)
		}
	}
	args := c.Args
	if len(args) == 0 {
		args = []string{c.Path}
	}
	req := request{Op: "start", Path: c.Path, Args: args, Env: env, Dir: c.Dir,
		Setpgid: c.Setpgid && !c.Setsid, Setsid: c.Setsid, Setctty: c.Setsid && c.Setctty, Pdeathsig: int(c.Pdeathsig), Stdin: -1, Stdout: -1, Stderr: -1, Cgroup: -1}
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
	s.proxy.stop()
	s.applied.holds.release()
	if s.ownRoot && s.tmpRoot != "" {
		_ = os.RemoveAll(s.tmpRoot)
	}
}

// helperEnv is the environment of a helper: its plan and nothing of the
// host's but GORACE, so that a race-enabled build's helper honours the
// host's settings (without it, such a helper sleeps a second at exit).
func helperEnv(plan []byte) []string {
	env := []string{planEnv + "=" + string(plan)}
	if v, ok := os.LookupEnv("GORACE"); ok {
		env = append(env, "GORACE="+v)
	}
	return env
}
