package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// runAct performs one action inside a sandbox and prints "ok" or the
// errno's name (or "err MESSAGE"), so that tests can tell EACCES from
// EROFS from ENOENT rather than read a shell's wording.
func runAct(args []string) int {
	if len(args) == 0 {
		fmt.Println("err no action")
		return 2
	}
	if code, ok := runNetAct(args); ok {
		return code
	}
	var err error
	ok := false
	for _, act := range []func(string, []string) (bool, error){fileAct, netAct, infoAct} {
		if ok, err = act(args[0], args); ok {
			break
		}
	}
	switch {
	case !ok:
		err = fmt.Errorf("unknown action %q", args[0])
	case errors.Is(err, errPrinted):
		return 0
	}
	fmt.Println(result(err))
	return 0
}

// errPrinted: the action printed what it found itself.
var errPrinted = errors.New("printed")

// fileAct performs the actions on the file system: writes, renames, metadata, mounts, Landlock; ok is false for another op.
func fileAct(op string, args []string) (ok bool, err error) {
	switch op {
	case "write":
		err = os.WriteFile(args[1], []byte("x"), 0o644)
		return true, err
	case "rename":
		err = os.Rename(args[1], args[2])
		return true, err
	case "chmod":
		err = os.Chmod(args[1], 0o666)
		return true, err
	case "chown":
		err = os.Chown(args[1], os.Getuid(), os.Getgid())
		return true, err
	case "utimes":
		now := time.Now()
		err = os.Chtimes(args[1], now, now)
		return true, err
	case "relandlock":
		// Try to widen the sandbox with a ruleset of our own.
		err = landlock.V7.BestEffort().RestrictPaths(landlock.RWDirs("/"))
		if err == nil {
			err = os.WriteFile(args[1], []byte("x"), 0o644)
		}
		return true, err
	case "mount-rw":
		// Clear the read-only flag of the mount at args[1] in place, then
		// write args[2].
		attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
		err = unix.MountSetattr(unix.AT_FDCWD, args[1], 0, &attr)
		if err == nil {
			err = os.WriteFile(args[2], []byte("x"), 0o644)
		}
		return true, err
	case "clone-write":
		// Write args[2] through a detached copy of the mount at args[1],
		// taken without the mounts below it.
		var fd int
		fd, err = unix.OpenTree(unix.AT_FDCWD, args[1], unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err == nil {
			var f int
			f, err = unix.Openat(fd, args[2], unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
			if err == nil {
				_, err = unix.Write(f, []byte("x"))
				unix.Close(f)
			}
			unix.Close(fd)
		}
		return true, err
	case "kill":
		var pid int
		pid, err = strconv.Atoi(args[1])
		if err == nil {
			err = syscall.Kill(pid, 0)
		}
		return true, err
	}
	return false, nil
}

// netAct performs the actions on sockets and io_uring; ok is false for another op.
func netAct(op string, args []string) (ok bool, err error) {
	switch op {
	case "dial":
		var c net.Conn
		c, err = net.DialTimeout("tcp", args[1], 5*time.Second)
		if err == nil {
			c.Close()
		}
		return true, err
	case "unix-dial":
		// connect(2) to a pathname (or, with a leading @, abstract) unix
		// socket, and send a line the server can check.
		var c net.Conn
		c, err = net.DialTimeout("unix", args[1], 5*time.Second)
		if err == nil {
			_, err = c.Write([]byte("from the sandbox\n"))
			c.Close()
		}
		return true, err
	case "unix-dgram-pair":
		// A datagram socketpair is connected, yet sendto(2) with an
		// address reaches any datagram socket by path.
		var fds [2]int
		fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Sendto(fds[0], []byte("from the sandbox\n"), 0, &unix.SockaddrUnix{Name: args[1]})
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return true, err
	case "raw-pair":
		// The kernel makes a SOCK_RAW unix pair a datagram one: the same
		// way out by sendto(2), under another name.
		var fds [2]int
		fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Sendto(fds[0], []byte("from the sandbox\n"), 0, &unix.SockaddrUnix{Name: args[1]})
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return true, err
	case "socket":
		// socket(2) of a family by its number, closed at once.
		var family int
		family, err = strconv.Atoi(args[1])
		if err == nil {
			var fd int
			fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if errors.Is(err, unix.EPROTOTYPE) || errors.Is(err, unix.ESOCKTNOSUPPORT) || errors.Is(err, unix.EPROTONOSUPPORT) {
				// The family got past the filter; only the type was wrong.
				fd, err = unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			}
			if err == nil {
				unix.Close(fd)
			}
		}
		return true, err
	case "seqpacket-pair":
		var fds [2]int
		fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return true, err
	case "stream-pair":
		var fds [2]int
		fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return true, err
	case "io-uring":
		// io_uring_setup(2) with one entry and zeroed parameters.
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			err = e
		} else {
			unix.Close(int(fd))
		}
		return true, err
	case "loopback":
		// A server and a client of our own, inside the namespace.
		var l net.Listener
		l, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			var c net.Conn
			c, err = net.Dial("tcp", l.Addr().String())
			if err == nil {
				c.Close()
			}
			l.Close()
		}
		return true, err
	}
	return false, nil
}

// infoAct performs the actions on what the command sees, printed: a directory, its environment, descriptors, ids, capabilities, a pty; ok is false for another op.
func infoAct(op string, args []string) (ok bool, err error) {
	switch op {
	case "ls":
		var names []string
		var entries []os.DirEntry
		entries, err = os.ReadDir(args[1])
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if err == nil {
			fmt.Println(strings.Join(names, " "))
			return true, errPrinted
		}
		return true, err
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return true, errPrinted
	case "fds":
		// Raw system calls: os.Open would start the runtime's poller,
		// whose descriptors would show up in the list.
		fmt.Println(openFDs())
		return true, errPrinted
	case "pid":
		fmt.Println(os.Getpid(), syscall.Getpgrp())
		return true, errPrinted
	case "caps":
		// The effective and bounding sets, as /proc shows them.
		var b []byte
		b, err = os.ReadFile("/proc/self/status")
		if err == nil {
			var caps []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "CapEff:") || strings.HasPrefix(l, "CapBnd:") {
					caps = append(caps, strings.Join(strings.Fields(l), " "))
				}
			}
			fmt.Println(strings.Join(caps, " "))
			return true, errPrinted
		}
		return true, err
	case "pty":
		// A pseudo-terminal opened and used as node-pty or script would:
		// termios and window size are ioctls on the device.
		var ptm, tty *os.File
		ptm, tty, err = pty.Open()
		if err == nil {
			err = pty.Setsize(ptm, &pty.Winsize{Rows: 24, Cols: 80})
			if err == nil {
				_, err = tty.Write([]byte("through the pty\n"))
			}
			if err == nil {
				buf := make([]byte, 64)
				var n int
				n, err = ptm.Read(buf)
				if err == nil && !strings.Contains(string(buf[:n]), "through the pty") {
					err = fmt.Errorf("read %q", buf[:n])
				}
			}
			ptm.Close()
			tty.Close()
		}
		return true, err
	}
	return false, nil
}

func result(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return "err " + err.Error()
}

// openFDs lists this process's open descriptors (fd:target), except the
// one used to list them.
func openFDs() string {
	dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "err " + err.Error()
	}
	defer unix.Close(dir)
	buf := make([]byte, 4096)
	var names []string
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil {
			return "err " + err.Error()
		}
		if n == 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	var fds []int
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd != dir {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	var out []string
	for _, fd := range fds {
		target, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		out = append(out, fmt.Sprintf("%d:%s", fd, target))
	}
	return strings.Join(out, " ")
}
