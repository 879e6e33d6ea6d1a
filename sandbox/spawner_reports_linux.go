package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/acpterm/acpterm/internal/proc/procstat"
	"golang.org/x/sys/unix"
)

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
			// The helper reaps a command before the host releases it
			// only when it is ending, and a helper that reports a
			// process not its child is not to be trusted: either way
			// the spawner is killed, and the start failed for that.
			c.startErr = fmt.Errorf("%w: %v", ErrSpawnerDead, err)
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
	if st, err := procstat.Read(pid); err != nil || st.PPid != s.cmd.Process.Pid {
		if fd >= 0 {
			unix.Close(fd)
		}
		return fmt.Errorf("pid %d is not the helper's child (parent %d, %v)", pid, st.PPid, err)
	}
	c.Pid, c.pidfd = pid, fd
	s.mu.Lock()
	s.children[pid] = c
	s.mu.Unlock()
	return nil
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
