package probe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// The normative cases that hold a command on a FIFO (see fifo.go) rather
// than let it sleep.

// heldExit4 makes the FIFO $1, says "ready" and waits until something
// opens the FIFO for writing; then it removes it and exits 4. Where no FIFO
// can be made in the session cwd (a read-only workspace), it says
// "no-fifo" and sleeps 2 s instead.
const heldExit4 = `if mkfifo "$1"; then echo ready; read x < "$1"; rm -f "$1"; else echo no-fifo; sleep 2; fi; exit 4`

// openScript lets the command held on the FIFO $1 go on. Its write blocks
// until the held command reads, so it runs only once that one is known to
// be there.
const openScript = `[ -p "$1" ] || { echo "no FIFO at $1"; exit 1; }; printf 'go\n' > "$1"`

// waitAnswer is how one of several concurrent wait_for_exit calls ended.
type waitAnswer struct {
	n   int // 1, 2, 3 in the order they were sent
	st  *acp.WaitForTerminalExitResponse
	err error
}

func (a waitAnswer) String() string {
	if a.err != nil {
		return "error"
	}
	return waitStatus(a.st)
}

// concurrentWaits is caseConcurrentWaits as it goes from step to step:
// the command held on the FIFO, and the three waits on it. Each step
// returns false with the case's verdict when the case is over.
type concurrentWaits struct {
	t       *tester
	id      acp.TerminalID
	fifo    string
	held    bool   // the command waits on the FIFO; else it sleeps 2 s
	what    string // the command, as the verdicts name it
	answers chan waitAnswer
}

func caseConcurrentWaits(ctx context.Context, t *tester) verdict {
	fifo := t.fifoPaths("gate")[0]
	id, err := t.create(ctx, t.sh(heldExit4, fifo))
	if err != nil {
		return fail("%v", err)
	}
	passed := false
	defer func() {
		if !passed {
			t.removeFIFOs(ctx, fifo)
		}
	}()
	c := &concurrentWaits{t: t, id: id, fifo: fifo, answers: make(chan waitAnswer, 3)}
	if v, ok := c.awaitReady(ctx); !ok {
		return v
	}
	wctx, cancelWaits := context.WithCancel(ctx)
	defer cancelWaits()
	if v, ok := c.sendWaits(ctx, wctx); !ok {
		return v
	}
	if v, ok := c.outputWhilePending(ctx); !ok {
		return v
	}
	opener, v, ok := c.letGo(ctx)
	if !ok {
		return v
	}
	got, v, ok := c.collect(ctx, opener)
	if !ok {
		return v
	}
	passed = true
	if !c.held {
		return pass("3 pending waits all gave %s; output answered while they were pending (no FIFO could be made in the session cwd, so the command slept 2 s instead)", got[0])
	}
	return pass("3 pending waits all gave %s once the command was let go; output answered while they were pending", got[0])
}

// awaitReady waits for the command to say whether it is held on the FIFO
// ("ready") or, with no FIFO to be made, sleeps ("no-fifo").
func (c *concurrentWaits) awaitReady(ctx context.Context) (verdict, bool) {
	out, seen, err := awaitLine(ctx, c.t, c.id, readyWithin, "ready", "no-fifo")
	switch {
	case err != nil:
		return fail("waiting for the command to say \"ready\": %v", err), false
	case out.ExitStatus != nil:
		return fail("the command ended (%s) before the waits were sent: output %q", exitStatus(out.ExitStatus), out.Output), false
	case seen == "":
		return fail("output still %q %v after create, without the \"ready\" the command prints at once", out.Output, readyWithin), false
	}
	c.held = seen == "ready"
	c.what = "`sleep 2; exit 4` (no FIFO could be made in the session cwd)"
	if c.held {
		c.what = "`exit 4` held on a FIFO"
	}
	return verdict{}, true
}

// sendWaits sends the three waits, on wctx, each only once the one before
// it has been written to the client, so that all three are known to be
// pending afterwards.
func (c *concurrentWaits) sendWaits(ctx, wctx context.Context) (verdict, bool) {
	for n := 1; n <= 3; n++ {
		sent := c.t.tap.onSent(acp.MethodTerminalWaitForExit)
		go func() {
			st, err := c.t.wait(wctx, c.id)
			c.answers <- waitAnswer{n, st, err}
		}()
		select {
		case <-sent:
		case a := <-c.answers:
			return fail("%s: wait_for_exit #%d answered before the command could end: %s", c.what, a.n, errOr(a)), false
		case <-ctx.Done():
			return fail("wait_for_exit #%d was still not written to the client when the case's time ran out", n), false
		}
	}
	return verdict{}, true
}

// outputWhilePending asks for the output while the waits are pending: it
// must answer at once, and without an exit status while the command is
// held.
func (c *concurrentWaits) outputWhilePending(ctx context.Context) (verdict, bool) {
	d := share(ctx, settleWithin)
	octx, cancel := within(ctx, d)
	out, err := c.t.output(octx, c.id)
	cancel()
	switch {
	case expired(ctx, octx):
		return fail("terminal/output got no answer within %v while 3 waits were pending on %s: it seems queued behind them", dur(d), c.what), false
	case err != nil:
		return fail("while 3 waits were pending: %v", err), false
	case out.ExitStatus != nil && c.held:
		return fail("while 3 waits were pending, output had %s although the command was still held on its FIFO (output %q)", exitStatus(out.ExitStatus), out.Output), false
	case out.ExitStatus != nil:
		return fail("output answered only after the command ended (%s): it seems queued behind the pending waits", exitStatus(out.ExitStatus)), false
	}
	return verdict{}, true
}

// letGo starts the command that opens the FIFO, once no wait has answered
// while the held command could not end; it returns that command's id, or
// "" when the command is not held.
func (c *concurrentWaits) letGo(ctx context.Context) (acp.TerminalID, verdict, bool) {
	if !c.held {
		return "", verdict{}, true
	}
	select {
	case a := <-c.answers:
		return "", fail("wait_for_exit #%d answered (%s) while the command was still held on its FIFO", a.n, errOr(a)), false
	default:
	}
	opener, err := c.t.create(ctx, c.t.sh(openScript, c.fifo))
	if err != nil {
		return "", fail("with 3 waits pending and output answered, starting the command that lets the held one go: %v", err), false
	}
	return opener, verdict{}, true
}

// collect gathers the three answers, which must all be exit code 4. Once
// let go, the command ends at once and the answers should follow; without
// a FIFO it sleeps 2 s and only the case's time bounds them, as before
// there were FIFOs. opener is the command that let it go ("" if none).
func (c *concurrentWaits) collect(ctx context.Context, opener acp.TerminalID) ([]string, verdict, bool) {
	d := settleWithin
	if c.held {
		d = share(ctx, settleWithin)
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	var got []string
	var bad string
	for len(got) < 3 {
		select {
		case a := <-c.answers:
			got = append(got, a.String())
			switch {
			case bad != "":
			case a.err != nil:
				bad = fmt.Sprintf("wait_for_exit #%d: %v", a.n, a.err)
			case !hasCode(a.st.ExitCode, 4):
				bad = fmt.Sprintf("wait_for_exit #%d gave %s", a.n, waitStatus(a.st))
			}
		case <-tm.C:
			return nil, fail("%s with 3 waits pending: %d answered within %v%s; %s", c.what, len(got), dur(d), listed(got), stuckAccount(ctx, c.t, c.id, opener)), false
		}
	}
	if bad != "" {
		return nil, fail("%s with 3 waits pending: %s (answers: %s)", c.what, bad, strings.Join(got, "; ")), false
	}
	return got, verdict{}, true
}

func errOr(a waitAnswer) string {
	if a.err != nil {
		return a.err.Error()
	}
	return waitStatus(a.st)
}

func listed(got []string) string {
	if len(got) == 0 {
		return ""
	}
	return " (" + strings.Join(got, "; ") + ")"
}

// stuckAccount says what the case sees when pending waits are left
// unanswered: whether the command has ended, and whether the one that
// opens its FIFO (opener, "" if none) has.
func stuckAccount(ctx context.Context, t *tester, id, opener acp.TerminalID) string {
	out, err := t.output(ctx, id)
	switch {
	case err != nil:
		return fmt.Sprintf("then %v", err)
	case out.ExitStatus != nil:
		return fmt.Sprintf("yet output shows the command ended, with %s", exitStatus(out.ExitStatus))
	case opener == "":
		return fmt.Sprintf("output %q shows the command still running", out.Output)
	}
	oout, err := t.output(ctx, opener)
	switch {
	case err != nil:
		return fmt.Sprintf("the command still ran; about the one opening its FIFO: %v", err)
	case oout.ExitStatus == nil:
		return "the command still ran, and the one opening its FIFO had not ended: nothing read the FIFO"
	}
	return fmt.Sprintf("the command still ran, though the one opening its FIFO ended with %s (output %q)", exitStatus(oout.ExitStatus), oout.Output)
}

// heldAlive makes the FIFOs $1 and $2 and holds $2 open for writing, so
// that a reader of $2 sees end of file once this shell has ended, however
// it ended. Then it says "ready" and waits until something opens $1 for
// writing, which only the case's cleanup does. Nothing it starts after
// opening $2 (it starts nothing) could keep $2 open. It waits for its
// helper first: busybox sh does not restart an open that the helper's
// SIGCHLD interrupts, and would fail the open of $1 with EINTR.
const heldAlive = `mkfifo "$1" "$2" || { rm -f "$1" "$2"; exit 99; }
: < "$2" & exec 3> "$2"; wait $!
echo ready
read x < "$1"
exec 3>&-
rm -f "$1" "$2"`

// watchScript ends once nothing holds the FIFO $2 open for writing any
// more, then removes $1 and $2 and says "ended". Its own writer is there
// so that its open never waits for one that is gone, and has closed again
// before it reads.
const watchScript = `[ -p "$2" ] || { echo "no FIFO at $2"; exit 1; }
: > "$2" & w=$!
exec 4< "$2"
wait $w
cat <&4 > /dev/null
rm -f "$1" "$2"
echo ended`

func caseReleaseStopsCommand(ctx context.Context, t *tester) verdict {
	p := t.fifoPaths("gate", "held")
	gate, hold := p[0], p[1]
	id, err := t.create(ctx, t.sh(heldAlive, gate, hold))
	if err != nil {
		return fail("%v", err)
	}
	passed := false
	defer func() {
		if !passed {
			t.removeFIFOs(ctx, gate, hold)
		}
	}()
	out, seen, err := awaitLine(ctx, t, id, readyWithin, "ready")
	switch {
	case err != nil:
		return fail("waiting for the command to say \"ready\": %v", err)
	case seen == "" && out.ExitStatus != nil && hasCode(out.ExitStatus.ExitCode, 99):
		return skip("not checked: no FIFO could be made in the session cwd to watch the command by (output %q)", out.Output)
	case out.ExitStatus != nil:
		return fail("the command ended (%s) before it was released: output %q", exitStatus(out.ExitStatus), out.Output)
	case seen == "":
		return fail("output still %q %v after create, without the \"ready\" the command prints at once", out.Output, readyWithin)
	}

	start := time.Now()
	if err := t.release(ctx, id); err != nil {
		return fail("%v", err)
	}
	took := time.Since(start)
	// The released command holds a FIFO open for as long as it lives; a
	// second command reads it until end of file.
	wid, err := t.create(ctx, t.sh(watchScript, gate, hold))
	if err != nil {
		return fail("released in %v; then %v", dur(took), err)
	}
	d := share(ctx, settleWithin)
	wctx, cancel := within(ctx, d)
	st, werr := t.wait(wctx, wid)
	cancel()
	after := time.Since(start)
	wout, err := t.output(ctx, wid)
	switch {
	case err != nil:
		return fail("released in %v; then, on the command watching its FIFO: %v", dur(took), err)
	case wout.ExitStatus == nil && expired(ctx, wctx):
		return fail("the released command kept running: %v after the release it still held its end of a FIFO open", dur(after))
	case wout.ExitStatus == nil && werr != nil:
		return fail("released in %v; the command watching its FIFO: %v, and its output %q has no exitStatus", dur(took), werr, wout.Output)
	case wout.ExitStatus == nil:
		return fail("released in %v; wait_for_exit on the command watching its FIFO gave %s, but its output %q has no exitStatus", dur(took), waitStatus(st), wout.Output)
	case !hasCode(wout.ExitStatus.ExitCode, 0) || !hasLine(wout.Output, "ended"):
		return fail("released in %v; the command watching its FIFO ended with %s and output %q", dur(took), exitStatus(wout.ExitStatus), wout.Output)
	}
	passed = true
	return pass("released in %v; the command's hold on a FIFO had ended %v after the release: it was stopped", dur(took), dur(after))
}
