package sandbox

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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
	if c.dropCred != nil {
		c.dropCred()
		c.dropCred = nil
	}
	if c.tmp == "" {
		return nil
	}
	tmp := c.tmp
	c.tmp = ""
	return os.RemoveAll(tmp)
}
