//go:build linux

package k8stest

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
	"github.com/acpterm/acpterm/remote"
)

// place is where the contract's commands run, as the test can see it.
type place interface {
	// marked lists the live processes there (zombies count as dead)
	// whose environment holds markerVar=marker.
	marked(t testing.TB, marker string) []string
	// servers lists what still runs there of the exec servers.
	servers(t testing.TB) []string
}

// waitNoneMarked asks pl until no process holds the marker or within has
// passed, and returns those still there. Nothing tells when another
// process tree ends: it polls.
func waitNoneMarked(t testing.TB, pl place, marker string, within time.Duration) []string {
	return waitGone(within, func() []string { return pl.marked(t, marker) })
}

func waitGone(within time.Duration, list func() []string) []string {
	var left []string
	_ = poll(nil, within, func() error {
		if left = list(); len(left) > 0 {
			return errLeft
		}
		return nil
	})
	return left
}

var errLeft = errors.New("still running")

// waitMarked waits until n processes hold the marker there.
func waitMarked(t testing.TB, pl place, marker string, n int) {
	t.Helper()
	var got []string
	if poll(nil, 10*time.Second, func() error {
		if got = pl.marked(t, marker); len(got) < n {
			return errLeft
		}
		return nil
	}) != nil {
		t.Fatalf("%d processes with the marker (%v), want %d", len(got), got, n)
	}
}

// sameMachine is a pod's container in the test cluster: its processes are this
// machine's, and /proc shows them at once.
type sameMachine struct{ ctr *container }

func (l sameMachine) marked(_ testing.TB, marker string) []string {
	return pids(sshtest.Running(markerVar, marker))
}

func (l sameMachine) servers(testing.TB) []string { return pids(l.ctr.running()) }

func pids(ps []int) []string {
	var s []string
	for _, p := range ps {
		s = append(s, strconv.Itoa(p))
	}
	return s
}

// inPod looks at a pod's processes from inside, through kubectl exec and
// the pod's own sh: what a real cluster's pod shows, its /proc being in
// another machine and another PID namespace. Each look is one exec.
type inPod struct {
	target  remote.Target
	kubectl []string // kubectl and its options, before "exec"
}

func (p inPod) marked(t testing.TB, marker string) []string {
	return p.list(t, `tr '\0' '\n' < "$d/environ" | grep -qx `+remote.ShellQuote(markerVar+"="+marker))
}

func (p inPod) servers(t testing.TB) []string {
	// An acpterm whose first argument is exec-server (not, say, the
	// kubectl that started it, where the pod's processes are this
	// machine's).
	return p.list(t, `tr '\0' ' ' < "$d/cmdline" | grep -q '^[^ ]*acpterm exec-serve[r] '`)
}

// list runs test for each process directory $d of the pod's /proc (the
// list's own sh excepted) and returns "PID ARGS" of the live ones it
// holds for. The tests are written not to match the list's own
// processes, whose command line is the script and whose environment is
// the container's.
func (p inPod) list(t testing.TB, test string) []string {
	t.Helper()
	script := `for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = $$ ] && continue; ` +
		`if { ` + test + `; } 2>/dev/null; then s=$(sed 's/.*) //' "$d/stat" 2>/dev/null | cut -c1); ` +
		`[ -n "$s" ] && [ "$s" != Z ] && echo "$p $(tr '\0' ' ' < "$d/cmdline")"; fi; done 2>/dev/null; true`
	args := append(append([]string{}, p.kubectl[1:]...), p.execArgs()...)
	args = append(args, "sh", "-c", script)
	cmd := exec.Command(p.kubectl[0], args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the pod's processes: %v\n%s", err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func (p inPod) execArgs() []string {
	var a []string
	if p.target.Context != "" {
		a = append(a, "--context", p.target.Context)
	}
	a = append(a, "exec", "-i", "-n", p.target.Namespace, p.target.Pod)
	if p.target.Container != "" {
		a = append(a, "-c", p.target.Container)
	}
	return append(a, "--")
}
