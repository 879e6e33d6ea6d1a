//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
)

// watchdogScript waits for the end of its stdin, which only the owner
// holds open, and then kills the owner's cgroups under the parent ($1)
// whose names start with the owner's prefix ($2). It ignores the signals a
// terminal or a hang-up sends, so that only the owner's end wakes it; the
// removal of the emptied cgroups is left to the next New (CleanStale), as
// it was before.
const watchdogScript = `trap '' HUP INT QUIT TERM PIPE
while read -r _; do :; done
for d in "$1"/"$2"*; do
	[ -f "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill"
done
exit 0`

// watched holds the parents a watchdog looks after for this process.
var watched = struct {
	sync.Mutex
	parents map[string]bool
	// ends are the write ends of the watchdogs' stdin: held, never
	// written, closed by the kernel when this process ends, however it
	// ends.
	ends []*os.File
	pids []int
}{parents: make(map[string]bool)}

// Watchdogs returns the PIDs of this process's watchdogs: children that
// live as long as it does, by design, for tests that count children.
func Watchdogs() []int {
	watched.Lock()
	defer watched.Unlock()
	return slices.Clone(watched.pids)
}

// watch starts, once per parent, a process that kills this process's
// cgroups under parent when this process is gone: killed with SIGKILL, by
// the OOM killer, or ended by a signal it does not handle. Without it,
// what the cgroups held (a setsid daemon a command started, out of
// PR_SET_PDEATHSIG's reach) lived on until the next acpterm started. The
// watchdog is /bin/sh, in a process group of its own (Ctrl-C at the
// terminal does not reach it), outside the cgroups it kills; a normal
// exit wakes it too, and it finds nothing left to kill. Failing to start
// one is not an error: the next New still removes what is stale.
func watch(parent, prefix string) {
	watched.Lock()
	defer watched.Unlock()
	if watched.parents[parent] {
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "acpterm-cgroup-watchdog", parent, prefix)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return
	}
	// Not waited for: it lives as long as this process does. Released, so
	// that no goroutine waits on it.
	watched.pids = append(watched.pids, cmd.Process.Pid)
	_ = cmd.Process.Release()
	watched.parents[parent] = true
	watched.ends = append(watched.ends, w)
}
