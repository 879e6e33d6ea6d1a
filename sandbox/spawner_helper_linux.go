package sandbox

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/childexit"
	"golang.org/x/sys/unix"
)

// The helper side of a Spawner: serveMain runs in the re-executed host
// binary, confined once, and starts commands on request. See spawner_linux.go
// for the protocol.

// spawnerFD is the helper's end of the socket, passed as ExtraFiles[0].
const spawnerFD = 3

// guardSpawner keeps the commands the helper starts away from the helper
// itself. They share its Landlock domain, which lets them ptrace it: the
// helper makes itself non-dumpable, so that ptrace, /proc/PID/mem and
// pidfd_getfd (the way to its socket) need CAP_SYS_PTRACE, and removes that
// capability from the bounding set its commands inherit.
func guardSpawner() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return errors.New("making the helper non-dumpable: " + err.Error())
	}
	err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0)
	if err != nil && os.Geteuid() == 0 {
		// Only a root command would gain the capability; others get none
		// (the ambient set was cleared).
		return errors.New("dropping CAP_SYS_PTRACE from the bounding set: " + err.Error())
	}
	return nil
}

type server struct {
	conn    *net.UnixConn
	devNull int

	wmu sync.Mutex // one reply at a time

	mu       sync.Mutex
	children map[int]*served
	wg       sync.WaitGroup // waitChild goroutines
}

type served struct {
	reap    chan struct{} // closed when the host released the command
	reaping bool
}

// startReq is a start request with the descriptors that came with it.
type startReq struct {
	req *request
	fds []int
}

// serveMain is the spawner's helper: it confines itself as pl says,
// reports ready, and starts commands until the host closes the socket;
// then it kills and reaps what it started and exits. It never returns.
// Forks happen on the calling thread, which helperMain locked and which
// setupSelf restricted: children inherit that thread's credentials, and
// their Pdeathsig is tied to it.
func serveMain(pl *plan) {
	// Descriptors the host leaked to the helper (opened without
	// close-on-exec, which exec.Cmd does not close) go no further.
	if err := unix.CloseRange(spawnerFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fail(ExitSetupFailed, "close_range: %v", err)
	}
	f := os.NewFile(spawnerFD, "spawner")
	c, err := net.FileConn(f) // a close-on-exec duplicate
	f.Close()
	if err != nil {
		fail(ExitSetupFailed, "spawner socket: %v", err)
	}
	s := &server{conn: c.(*net.UnixConn), children: map[int]*served{}}
	s.devNull, err = unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		_, err = setupSelf(pl)
	}
	if err != nil {
		s.send(&reply{Op: "fail", Err: err.Error()})
		os.Exit(ExitSetupFailed)
	}
	s.send(&reply{Op: "ready"})
	starts := make(chan startReq)
	go s.readLoop(starts)
	for r := range starts {
		s.start(r)
	}
	s.shutdown()
	os.Exit(0)
}

// readLoop reads requests until EOF or a malformed one, passes starts to
// the forking thread, and handles reaps itself.
func (s *server) readLoop(starts chan<- startReq) {
	defer close(starts)
	fr := &frameReader{}
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(maxFDs*4))
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			if ferr := fr.addRights(oob[:oobn]); ferr != nil {
				return
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return // descriptors were dropped: the stream cannot be trusted
		}
		fr.data = append(fr.data, buf[:n]...)
		for {
			msg, ok, ferr := fr.next()
			if ferr != nil {
				return
			}
			if !ok {
				break
			}
			var req request
			if json.Unmarshal(msg, &req) != nil {
				return
			}
			fds, ok := fr.take(req.NFD)
			if !ok {
				return
			}
			switch req.Op {
			case "start":
				starts <- startReq{&req, fds}
			case "reap":
				closeAll(fds)
				s.reap(req.Pid)
			default:
				closeAll(fds)
				return
			}
		}
		if err != nil || n == 0 {
			fr.closeAll()
			return
		}
	}
}

// start forks and execs one command and answers the request.
func (s *server) start(r startReq) {
	defer closeAll(r.fds)
	req := r.req
	fd := func(i int) (uintptr, bool) {
		if i < 0 {
			return uintptr(s.devNull), true
		}
		if i >= len(r.fds) {
			return 0, false
		}
		return uintptr(r.fds[i]), true
	}
	in, ok1 := fd(req.Stdin)
	out, ok2 := fd(req.Stdout)
	errf, ok3 := fd(req.Stderr)
	if !ok1 || !ok2 || !ok3 {
		s.send(&reply{Op: "started", ID: req.ID, Errno: int(unix.EBADF), Err: "bad descriptor index"})
		return
	}
	sys := &syscall.SysProcAttr{Setpgid: req.Setpgid, Setsid: req.Setsid, Setctty: req.Setctty, Pdeathsig: syscall.Signal(req.Pdeathsig)}
	if req.Cgroup >= 0 {
		cg, ok := fd(req.Cgroup)
		if !ok {
			s.send(&reply{Op: "started", ID: req.ID, Errno: int(unix.EBADF), Err: "bad descriptor index"})
			return
		}
		sys.UseCgroupFD, sys.CgroupFD = true, int(cg)
	}
	pid, err := syscall.ForkExec(req.Path, req.Args, &syscall.ProcAttr{
		Dir: req.Dir, Env: req.Env, Files: []uintptr{in, out, errf}, Sys: sys,
	})
	if err != nil {
		rep := &reply{Op: "started", ID: req.ID, Err: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			rep.Errno = int(errno)
		}
		s.send(rep)
		return
	}
	sv := &served{reap: make(chan struct{})}
	s.mu.Lock()
	s.children[pid] = sv
	s.wg.Add(1)
	s.mu.Unlock()
	// The answer goes out before the exit report can.
	s.send(&reply{Op: "started", ID: req.ID, Pid: pid})
	go s.waitChild(pid, sv)
}

// waitChild reports the command's exit without reaping it: the zombie
// keeps the PID, and with it the process group ID, reserved until the
// host releases it, so that the host's kill(-pgid) cannot hit a stranger.
func (s *server) waitChild(pid int, sv *served) {
	defer s.wg.Done()
	rep := &reply{Op: "exited", Pid: pid}
	st, err := childexit.Wait(pid)
	if err != nil {
		rep.Err = err.Error()
	} else {
		rep.Code, rep.Signal = st.Code, int(st.Signal)
	}
	s.send(rep)
	<-sv.reap
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
			break
		}
	}
	s.mu.Lock()
	delete(s.children, pid)
	s.mu.Unlock()
}

func (s *server) reap(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv := s.children[pid]; sv != nil && !sv.reaping {
		sv.reaping = true
		close(sv.reap)
	}
}

// shutdown kills what the host did not release (their process groups
// too, which the Pdeathsig of the leader alone would miss) and reaps all.
func (s *server) shutdown() {
	s.mu.Lock()
	for pid, sv := range s.children {
		if !sv.reaping {
			_ = unix.Kill(-pid, unix.SIGKILL)
			_ = unix.Kill(pid, unix.SIGKILL)
			sv.reaping = true
			close(sv.reap)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// send writes one reply. A host that is gone shows as EOF on the next read.
func (s *server) send(r *reply) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, _ = s.conn.Write(appendFrame(nil, b))
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
