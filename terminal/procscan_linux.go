//go:build linux

package terminal

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"

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
		// Repeat until a pass finds nobody: a process may have forked
		// between being listed and being killed.
		for pass := 0; pass < 10 && scanProc(set) > 0; pass++ {
		}
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

// scanProc sends SIGKILL to each live process whose environment has
// MarkerEnv set to a value in markers and returns how many it killed.
func scanProc(markers map[string]bool) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	self := os.Getpid()
	killed := 0
	buf := make([]byte, 0, 64<<10)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if buf, err = readEnviron(pid, buf); err != nil || !hasMarker(buf, markers) {
			continue
		}
		// Open a pidfd, then look again: the PID may have been reused
		// between the read and the open; the pidfd pins the process.
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if err == unix.ENOSYS && unix.Kill(pid, unix.SIGKILL) == nil {
				killed++
			}
			continue
		}
		if buf, err = readEnviron(pid, buf); err == nil && hasMarker(buf, markers) {
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				killed++
			}
		}
		_ = unix.Close(fd)
	}
	return killed
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
