package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrNoPTY is wrapped by the error of OpenPTY when the spawner's commands
// have no devpts of their own (Applied.PrivatePTS is false).
var ErrNoPTY = errors.New("sandbox: the spawner has no devpts of its own")

// OpenPTY opens a pseudo-terminal in the devpts that the helper mounted
// for its commands, and returns its master, for the host, and its
// terminal end, for a command: Start it with Cmd.Stdin, Stdout and Stderr
// set to tty and Setsid and Setctty, and close tty once it has started.
//
// Opened there, the terminal is one the command can name: ttyname and
// tty(1) find it under its /dev/pts, and /dev/tty opens it (the helper has
// no controlling terminal of its own, so /dev/tty is the command's own
// terminal or none). The host reaches the devpts through the helper's
// root, /proc/PID/root; the master is non-blocking, for the runtime's
// poller.
func (s *Spawner) OpenPTY() (master, tty *os.File, err error) {
	if err := s.err(); err != nil {
		return nil, nil, err
	}
	if !s.privatePTS {
		return nil, nil, ErrNoPTY
	}
	path := "/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/root" + ptsDir + "/ptmx"
	master, err = os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: opening the helper's ptmx: %w", err)
	}
	tty, err = peer(master)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("sandbox: opening a pty in the helper's devpts: %w", err)
	}
	return master, tty, nil
}

// peer unlocks the pty of master and opens its terminal end (TIOCGPTPEER:
// by descriptor, not by a path that might name another devpts).
func peer(master *os.File) (*os.File, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var ioErr error
	err = rc.Control(func(m uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(m), unix.TIOCSPTLCK, 0); ioErr != nil {
			return
		}
		r, _, e := unix.Syscall(unix.SYS_IOCTL, m, unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
		if e != 0 {
			ioErr = e
			return
		}
		fd = int(r)
	})
	if err != nil {
		return nil, err
	}
	if ioErr != nil {
		return nil, ioErr
	}
	return os.NewFile(uintptr(fd), "/dev/pts/?"), nil
}
