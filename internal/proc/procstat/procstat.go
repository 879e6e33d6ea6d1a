// Package procstat reads the fields acpterm needs from Linux's
// /proc/PID/stat: a process's state, parent and start time.
//
// The command name in that file is the process's own choice (up to 15
// bytes of anything, spaces and parentheses included), so the fields are
// counted from the last ')' and every field is checked.
package procstat

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// Stat is what acpterm uses of /proc/PID/stat.
type Stat struct {
	State   byte   // R, S, D, Z (zombie), X (dead), …
	PPid    int    // the parent's PID
	PGrp    int    // the process group ID
	Session int    // the session ID (changed by setsid)
	Start   uint64 // start time in clock ticks after boot
}

// ErrMalformed is wrapped by the errors of Parse.
var ErrMalformed = errors.New("malformed /proc/PID/stat")

// Read reads and parses /proc/PID/stat.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Fields of /proc/PID/stat, counted from 1 as in proc(5).
const (
	fieldState   = 3
	fieldPPid    = 4
	fieldPGrp    = 5
	fieldSession = 6
	fieldStart   = 22
)

// Parse parses the contents of a /proc/PID/stat file.
func Parse(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, ErrMalformed
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3, the state.
	field := func(n int) []byte { return f[n-fieldState] }
	if len(f) <= fieldStart-fieldState || len(field(fieldState)) != 1 {
		return Stat{}, ErrMalformed
	}
	st := Stat{State: field(fieldState)[0]}
	for _, id := range []struct {
		n int
		v *int
	}{{fieldPPid, &st.PPid}, {fieldPGrp, &st.PGrp}, {fieldSession, &st.Session}} {
		v, err := strconv.Atoi(string(field(id.n)))
		if err != nil || v < 0 {
			return Stat{}, ErrMalformed
		}
		*id.v = v
	}
	start, err := strconv.ParseUint(string(field(fieldStart)), 10, 64)
	if err != nil {
		return Stat{}, ErrMalformed
	}
	st.Start = start
	return st, nil
}
