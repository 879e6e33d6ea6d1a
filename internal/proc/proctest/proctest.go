//go:build linux

package proctest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/acpterm/acpterm/internal/proc/procstat"
	"golang.org/x/sys/unix"
)

// Alive reports whether pid is a live process. A zombie counts as dead:
// it has exited, and the PID 1 of a container does not always reap
// orphans.
func Alive(pid int) bool {
	st, ok := ReadStat(pid)
	return ok && st.live()
}

// LiveInGroup lists the live processes of process group pgid.
func LiveInGroup(pgid int) []int {
	return processes(func(st procstat.Stat) bool {
		return st.PGrp == pgid && st.State != 'Z' && st.State != 'X'
	})
}

// Children lists the processes whose parent is pid, zombies included: a
// child not reaped is left behind as much as one still running.
func Children(pid int) []int {
	return processes(func(st procstat.Stat) bool { return st.PPid == pid })
}

// processes lists the processes whose stat satisfies match.
func processes(match func(procstat.Stat) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procstat.Read(pid); err == nil && match(st) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Stat is what tests read of /proc/PID/stat.
type Stat struct {
	State   string // "R", "S", "Z" (zombie), …
	PGrp    int    // process group
	Session int    // session (changed by setsid)
}

func (s Stat) live() bool { return s.State != "Z" && s.State != "X" }

// ReadStat reads /proc/PID/stat; false if there is no such process.
func ReadStat(pid int) (Stat, bool) {
	st, err := procstat.Read(pid)
	if err != nil {
		return Stat{}, false
	}
	return Stat{State: string([]byte{st.State}), PGrp: st.PGrp, Session: st.Session}, true
}

// WaitExit waits until every process in pids has exited, or fails once
// timeout has passed. It waits on pidfds (Linux 5.3 and later), which
// become readable when their process exits, so it works for processes
// that are not the caller's children and needs no polling.
func WaitExit(pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // already gone (and reaped)
		}
		if err != nil {
			return fmt.Errorf("pidfd_open(%d): %w", pid, err)
		}
		err = waitReadable(fd, deadline)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("pid %d: %w", pid, err)
		}
	}
	return nil
}

func waitReadable(fd int, deadline time.Time) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("still running")
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// WaitGroupGone waits until process group pgid has no live process left,
// or fails once timeout has passed.
func WaitGroupGone(pgid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		live := LiveInGroup(pgid)
		if len(live) == 0 {
			return nil
		}
		if err := WaitExit(live, time.Until(deadline)); err != nil {
			return fmt.Errorf("process group %d: %v still alive: %w", pgid, live, err)
		}
	}
}
