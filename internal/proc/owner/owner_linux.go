package owner

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/acpterm/acpterm/internal/proc/procstat"
	"golang.org/x/sys/unix"
)

// Dead reports whether name was made by this package (or is an older
// acpterm-PID-RANDOM cgroup name) and its owner is dead: no process with
// that PID, a zombie, or a process with that PID but another start time.
func Dead(name string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	f := strings.SplitN(rest, "-", 4)
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return false
	}
	switch len(f) {
	case 2: // acpterm-PID-RANDOM, from before START was in the name
		return unix.Kill(pid, 0) == unix.ESRCH
	case 4:
		want, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return false
		}
		st, err := procstat.Read(pid)
		if errors.Is(err, fs.ErrNotExist) {
			return true
		}
		if err != nil {
			return false // unreadable: not ours to judge
		}
		return st.State == 'Z' || st.State == 'X' || st.Start != want
	}
	return false
}

// StartTime is pid's start time in clock ticks after boot.
func StartTime(pid int) (uint64, error) {
	st, err := procstat.Read(pid)
	return st.Start, err
}
