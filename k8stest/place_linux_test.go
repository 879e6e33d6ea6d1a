//go:build linux

package k8stest

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
)

// errLeft is what a poll of processes that should end says meanwhile.
var errLeft = errors.New("still running")

// sameMachine is a pod's container in the test cluster: its processes
// are this machine's, and /proc shows them at once (remotetest's
// SameMachine), the container's own among them.
type sameMachine struct {
	remotetest.SameMachine
	ctr *container
}

// PS lists the container's processes whose command line holds one of
// words, as "PID ARGS".
func (l sameMachine) PS(_ testing.TB, words ...string) []string {
	var hits []string
	for _, pid := range l.ctr.running() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue // gone
		}
		args := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		for _, w := range words {
			if strings.Contains(args, w) {
				hits = append(hits, strconv.Itoa(pid)+" "+args)
				break
			}
		}
	}
	return hits
}

// inPod looks at a pod's processes from inside, through kubectl exec and
// the pod's own sh: what a real cluster's pod shows, its /proc being in
// another machine and another PID namespace. Each look is one exec.
type inPod struct {
	target  remote.Target
	kubectl []string // kubectl and its options, before "exec"
}

// Marked lists the pod's live processes that hold the marker, as "PID
// ARGS".
func (p inPod) Marked(t testing.TB, marker string) []string {
	return p.list(t, `tr '\0' '\n' < "$d/environ" | grep -qx `+remote.ShellQuote(remotetest.MarkerVar+"="+marker))
}

// PS lists the pod's live processes whose command line holds one of
// words, as "PID ARGS".
func (p inPod) PS(t testing.TB, words ...string) []string {
	test := `tr '\0' ' ' < "$d/cmdline" | grep -q`
	for _, w := range words {
		test += " -e " + remote.ShellQuote(selfless(w))
	}
	return p.list(t, test)
}

// selfless is a basic regular expression that matches w and not itself,
// its last letter in brackets, so that a command line that holds the
// pattern (the list's script, in kubectl's arguments when the pod's
// processes are this machine's) is not taken for one that holds w.
func selfless(w string) string {
	var b strings.Builder
	for i, r := range w {
		switch {
		case i+utf8.RuneLen(r) == len(w) && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteString("[" + string(r) + "]")
		case strings.ContainsRune(`\.[]*^$`, r):
			b.WriteString(`\` + string(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
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
