package probe

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/randhex"
)

// Some cases hold a command on a named pipe (FIFO) instead of letting it
// sleep: the command blocks until the probe lets it go, or its death shows
// as the end of a pipe, so that the case waits for an event rather than
// for the wall clock. The FIFOs live in the session cwd, which every
// command of the session sees; TMPDIR would not do, since a client may
// give each terminal a private one (acpterm's sandbox does). Blocking
// opens and end of file are all the cases rely on: POSIX sh, mkfifo and
// cat, no O_RDWR open of a FIFO.

const (
	// readyWithin bounds how long a held command may take to say it is
	// in place.
	readyWithin = 5 * time.Second
	// settleWithin bounds how long something that should follow at once
	// may take (a pending wait answering once its command has ended); see
	// share.
	settleWithin = 5 * time.Second
	// cleanupTimeout bounds removeFIFOs, even after the case's time is up.
	cleanupTimeout = 3 * time.Second
)

// fifoPaths returns paths in the session cwd for a case's FIFOs, one per
// name, with a random part in common.
func (t *tester) fifoPaths(names ...string) []string {
	token := randhex.String(8)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = path.Join(t.cwd, ".acpterm-probe-"+token+"-"+n)
	}
	return out
}

// clearScript lets go whatever is blocked opening the FIFO $1 for reading,
// then removes $@. It never blocks itself: its own background reader is
// there for its write to meet, whether or not anyone else reads. Only a
// FIFO that nobody else writes may be $1: another writer could meet the
// background reader first and leave the write alone.
const clearScript = `if [ -p "$1" ]; then : < "$1" & r=$!; : > "$1"; kill $r 2>/dev/null; fi
rm -f "$@"`

// removeFIFOs is the cleanup of a case that ends before its commands have
// removed their FIFOs: it kills the case's terminals that are not
// released, so that none is left making or holding a FIFO, lets go of a
// released command still blocked opening gate, and removes gate and
// others. It is bounded by cleanupTimeout whatever the client does, and
// runs even when the case's ctx has ended.
func (t *tester) removeFIFOs(ctx context.Context, gate string, others ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	live, _ := t.unreleased()
	for _, id := range live {
		_ = t.kill(ctx, id)
	}
	// Its end is seen in its output rather than with wait_for_exit, the
	// method a broken client most often gets wrong.
	id, err := t.create(ctx, t.sh(clearScript, append([]string{gate}, others...)...))
	if err == nil {
		_, _, _ = awaitLine(ctx, t, id, cleanupTimeout)
	}
}

// hasLine reports whether output has want as a line of its own (so that a
// path in an error message cannot pass for it).
func hasLine(output, want string) bool {
	// Without copying: the client's output may be as long as a message
	// may be, and it is polled every few milliseconds.
	for l := range strings.Lines(output) {
		if strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r") == want {
			return true
		}
	}
	return false
}

// awaitLine polls the output of terminal id until it has one of lines as
// a line of its own, or the command has ended, for at most d. It returns
// the last output (not nil when err is nil) and the line seen, "" if none.
func awaitLine(ctx context.Context, t *tester, id acp.TerminalID, d time.Duration, lines ...string) (*acp.TerminalOutputResponse, string, error) {
	var last *acp.TerminalOutputResponse
	var seen string
	_, err := poll(ctx, d, 20*time.Millisecond, func() (bool, error) {
		out, err := t.output(ctx, id)
		if err != nil {
			return false, err
		}
		last = out
		for _, l := range lines {
			if hasLine(out.Output, l) {
				seen = l
				return true, nil
			}
		}
		return out.ExitStatus != nil, nil
	})
	return last, seen, err
}

// share caps d at half the time ctx has left: when what the case waits
// for does not come, the case still has the time to look at what happened
// instead and say so, before its own time is up.
func share(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)/2)
	}
	return d
}
