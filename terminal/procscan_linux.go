//go:build linux

package terminal

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The /proc scan (IsolationProcScan): what a released terminal left
// behind outside any cgroup is found by the marker in its environment,
// and killed.

// scanKill kills every process whose environment carries one of markers.
// Concurrent callers share scans: whoever arrives while a scan runs has
// its markers picked up by the next one.
func (iso *isolator) scanKill(markers []string) {
	done := make(chan struct{})
	iso.scanMu.Lock()
	for _, m := range markers {
		iso.pending[m] = append(iso.pending[m], done)
	}
	if iso.scanning {
		iso.scanMu.Unlock()
		<-done
		return
	}
	iso.scanning = true
	for len(iso.pending) > 0 {
		batch := iso.pending
		iso.pending = map[string][]chan struct{}{}
		iso.scanMu.Unlock()
		set := make(map[string]bool, len(batch))
		for m := range batch {
			set[m] = true
		}
		scanUntilNone(set)
		closed := map[chan struct{}]bool{}
		for _, chs := range batch {
			for _, ch := range chs {
				if !closed[ch] {
					closed[ch] = true
					close(ch)
				}
			}
		}
		iso.scanMu.Lock()
	}
	iso.scanning = false
	iso.scanMu.Unlock()
}

// scanUntilNone kills every process carrying one of markers. It repeats
// the scan until a pass finds nobody, since a process may fork between
// being listed and being killed; then it looks again, a few times and
// briefly, at the processes whose environment read empty. A process
// reads so between the two halves of an execve (its new memory map is
// installed before its environment is placed in it), which a command
// that just called setsid and execs is likely to be in; one that waits
// out the scan there would carry its marker past it.
func scanUntilNone(markers map[string]bool) {
	// Bounded in all: a hostile command cannot keep the sweep going.
	for round := 0; round < 3; round++ {
		var unsure []int
		for pass := 0; pass < 10; pass++ {
			var killed int
			killed, unsure = scanProc(markers)
			if killed == 0 {
				break
			}
		}
		if !recheck(markers, unsure) {
			return
		}
		// What was caught late may have forked before it died: scan again.
	}
}

// recheck looks again at the processes of unsure, five times at most, a
// millisecond apart, and kills those that turn out to carry a marker. It
// reports whether it killed any.
func recheck(markers map[string]bool, unsure []int) bool {
	buf := make([]byte, 0, 64<<10)
	killed := false
	for try := 0; try < 5 && len(unsure) > 0; try++ {
		// An execve completes in microseconds; a process whose
		// environment is really empty stays so, and costs the sweep
		// these five milliseconds.
		time.Sleep(time.Millisecond)
		var again []int
		for _, pid := range unsure {
			var k, u bool
			buf, k, u = checkKill(pid, markers, buf)
			killed = killed || k
			if u {
				again = append(again, pid)
			}
		}
		unsure = again
	}
	return killed
}

// scanProc sends SIGKILL to each live process whose environment has
// MarkerEnv set to a value in markers. It returns how many it killed and
// the processes it could not tell about: live, not kernel threads, with an
// empty environment.
func scanProc(markers map[string]bool) (killed int, unsure []int) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	self := os.Getpid()
	buf := make([]byte, 0, 64<<10)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		var k, u bool
		buf, k, u = checkKill(pid, markers, buf)
		if k {
			killed++
		}
		if u {
			unsure = append(unsure, pid)
		}
	}
	return killed, unsure
}

// checkKill sends SIGKILL to process pid if its environment has one of
// markers, and says whether it did; unsure is true when the environment
// read empty from a process that has a program (neither a kernel thread
// nor a zombie), which is what a process in the middle of an execve
// looks like. buf is scratch space, returned for reuse.
func checkKill(pid int, markers map[string]bool, buf []byte) (_ []byte, killed, unsure bool) {
	buf, err := readEnviron(pid, buf)
	if err != nil {
		return buf, false, false
	}
	if len(buf) == 0 {
		_, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		return buf, false, err == nil
	}
	if !hasMarker(buf, markers) {
		return buf, false, false
	}
	// Open a pidfd, then look again: the PID may have been reused
	// between the read and the open; the pidfd pins the process.
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return buf, err == unix.ENOSYS && unix.Kill(pid, unix.SIGKILL) == nil, false
	}
	defer unix.Close(fd)
	if buf, err = readEnviron(pid, buf); err == nil && hasMarker(buf, markers) {
		return buf, unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil, false
	}
	return buf, false, false
}

// maxEnviron bounds how much of a process's environment readEnviron
// reads. At exec the kernel allows at most three quarters of the stack
// limit for arguments and environment together, 6 MiB when the stack is
// unlimited; only a process with CAP_SYS_RESOURCE can point its
// environment elsewhere (PR_SET_MM), and such a process must not make
// the scan read its whole memory. A marker past the bound is not seen,
// which gains a process nothing it could not have by dropping the marker.
const maxEnviron = 8 << 20

// readEnviron reads the environment of process pid into buf, at most
// maxEnviron bytes.
//
// /proc/PID/environ reads it through the thread-group leader, which has
// no memory map once it has exited: a process whose main thread ended
// alone (pthread_exit) while others run on shows an empty or unreadable
// environ there, and would hide its marker from the scan. The threads
// share one memory map, so the environment is then read through another
// thread. Processes gone (ENOENT) or not ours to read (EACCES) are not
// looked into further: their threads would say the same.
func readEnviron(pid int, buf []byte) ([]byte, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	buf, err := readEnvironFile(dir+"/environ", buf)
	if len(buf) > 0 || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return buf, err
	}
	d, terr := os.Open(dir + "/task")
	if terr != nil {
		return buf, err
	}
	tids, _ := d.Readdirnames(-1)
	_ = d.Close()
	leader := strconv.Itoa(pid)
	for _, tid := range tids {
		if tid == leader {
			continue
		}
		if buf, terr = readEnvironFile(dir+"/task/"+tid+"/environ", buf); terr == nil && len(buf) > 0 {
			return buf, nil
		}
	}
	return buf[:0], err
}

// readEnvironFile reads one environ file of /proc into buf, at most
// maxEnviron bytes.
func readEnvironFile(name string, buf []byte) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	return readBounded(f, buf[:0], maxEnviron), nil
}

// readBounded appends what r holds to buf, until end of file, an error or
// max bytes.
func readBounded(r io.Reader, buf []byte, max int) []byte {
	for len(buf) < max {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), max)])
		buf = buf[:len(buf)+n]
		if err != nil || n == 0 {
			break
		}
	}
	return buf
}

var markerPrefix = []byte(MarkerEnv + "=")

func hasMarker(environ []byte, markers map[string]bool) bool {
	for len(environ) > 0 {
		kv := environ
		if i := bytes.IndexByte(environ, 0); i >= 0 {
			kv, environ = environ[:i], environ[i+1:]
		} else {
			environ = nil
		}
		if v, ok := bytes.CutPrefix(kv, markerPrefix); ok && markers[string(v)] {
			return true
		}
	}
	return false
}
