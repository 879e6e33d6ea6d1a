package workspace

import (
	"os"
	"strconv"
)

// openedPath is the path of the file open at f, as the kernel names it.
// (SyscallConn, not Fd, which would make the descriptor blocking.)
func openedPath(f *os.File) (string, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", false
	}
	var p string
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		p, rerr = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
	}); err != nil || rerr != nil {
		return "", false
	}
	return p, len(p) > 0 && p[0] == '/'
}
