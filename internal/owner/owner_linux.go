package owner

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

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
		st, err := readStat(pid)
		if errors.Is(err, fs.ErrNotExist) {
			return true
		}
		if err != nil {
			return false // unreadable: not ours to judge
		}
		return st.state == "Z" || st.state == "X" || st.start != want
	}
	return false
}

// StartTime is pid's start time in clock ticks after boot.
func StartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}

type stat struct {
	state string
	start uint64
}

// readStat reads the state and start time of /proc/PID/stat.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// pid (comm) state ppid … starttime is field 22; comm may hold spaces
	// and parentheses, so count from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	const startField = 22 - 3 // fields after comm start at 3 (state)
	if len(f) <= startField {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	start, err := strconv.ParseUint(f[startField], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat: %w", pid, err)
	}
	return stat{state: f[0], start: start}, nil
}
