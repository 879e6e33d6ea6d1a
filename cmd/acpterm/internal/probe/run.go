package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// finishTimeout bounds what follows a case (its last update, the release of
// its terminals) and the closing message, even after a cancel.
const finishTimeout = 5 * time.Second

// runner runs the suite for one prompt.
type runner struct {
	a       *agent
	sid     acp.SessionID
	cwd     string
	run     int
	timeout time.Duration
	report  *Report
	note    string // said before the table, e.g. why everything was skipped
}

func (r *runner) runAll(ctx context.Context) {
	if !r.a.conn.ClientCapabilities().Terminal {
		r.note = "This client does not advertise clientCapabilities.terminal, so there is nothing to probe: every case is skipped."
		for _, c := range r.a.cases {
			r.report.Cases = append(r.report.Cases, c.result(ResultSkip, "client does not advertise clientCapabilities.terminal", 0))
		}
		return
	}
	for _, c := range r.a.cases {
		if ctx.Err() != nil {
			r.report.Cases = append(r.report.Cases, c.result(ResultSkip, "run cancelled before this case", 0))
			continue
		}
		r.report.Cases = append(r.report.Cases, r.runCase(ctx, c))
	}
	if ctx.Err() != nil {
		r.note = "The run was cancelled; the cases that did not run are skipped."
	}
}

// runCase announces, runs, reports and cleans up one case.
func (r *runner) runCase(ctx context.Context, c *probeCase) CaseResult {
	conn := r.a.conn
	callID := acp.ToolCallID(fmt.Sprintf("probe-%d-%s", r.run, c.ID))
	rawInput, _ := json.Marshal(c.Case)
	_ = conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: r.sid, Update: &acp.ToolCall{
		ToolCallID: callID,
		Title:      "probe: " + c.Title,
		Kind:       acp.ToolKindExecute,
		Status:     acp.ToolCallStatusInProgress,
		RawInput:   rawInput,
	}})

	t := &tester{conn: conn, tap: r.a.tap, sid: r.sid, cwd: r.cwd}
	t.embed = func(ctx context.Context, ids []acp.TerminalID) {
		_ = conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: r.sid, Update: &acp.ToolCallUpdate{
			ToolCallID: callID,
			Content:    terminalContent(ids),
		}})
	}

	caseCtx, cancel := context.WithTimeout(ctx, r.timeout)
	start := time.Now()
	v := c.run(caseCtx, t)
	elapsed := time.Since(start)
	expired := errors.Is(caseCtx.Err(), context.DeadlineExceeded)
	cancel()

	switch {
	case ctx.Err() != nil && v.result != ResultPass:
		v = verdict{ResultSkip, "cancelled while the case ran (" + v.observed + ")"}
	case expired && v.result != ResultPass:
		v.result = ResultFail
		if m := t.stalledMethod(); m != "" {
			v.observed = fmt.Sprintf("no answer within %v to %s", r.timeout, m)
		} else {
			v.observed = fmt.Sprintf("the case did not finish within %v (%s)", r.timeout, v.observed)
		}
	}
	res := c.result(v.result, v.observed, elapsed)

	fin, cancelFin := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancelFin()
	status := acp.ToolCallStatusCompleted
	if res.Result == ResultFail || res.Result == ResultSkip {
		status = acp.ToolCallStatusFailed
	}
	update := &acp.ToolCallUpdate{ToolCallID: callID, Status: &status}
	update.RawOutput, _ = json.Marshal(res)
	// Content replaces what the tool call showed. A terminal may only be
	// embedded before its release, so the result text joins the terminals
	// only while all of them are live; otherwise the content is left as it
	// was and the result travels in rawOutput alone.
	if live, ok := t.unreleased(); ok {
		update.Content = append(terminalContent(live), acp.TextToolCallContent(string(res.Result)+": "+res.Observed))
	}
	_ = conn.SessionUpdate(fin, &acp.SessionNotification{SessionID: r.sid, Update: update})
	t.releaseAll(fin)
	return res
}

func terminalContent(ids []acp.TerminalID) []acp.ToolCallContent {
	out := make([]acp.ToolCallContent, 0, len(ids)+1)
	for _, id := range ids {
		out = append(out, acp.TerminalContent(id))
	}
	return out
}

// verdict is what a case concludes.
type verdict struct {
	result   Result
	observed string
}

func pass(format string, args ...any) verdict {
	return verdict{ResultPass, fmt.Sprintf(format, args...)}
}

func fail(format string, args ...any) verdict {
	return verdict{ResultFail, fmt.Sprintf(format, args...)}
}

// skip is the verdict of a case that could not check what it is about.
func skip(format string, args ...any) verdict {
	return verdict{ResultSkip, fmt.Sprintf(format, args...)}
}

// note is the verdict of an informational case.
func note(format string, args ...any) verdict {
	return verdict{ResultInfo, fmt.Sprintf(format, args...)}
}

// tester is what a case uses to drive the client's terminals. It keeps
// track of the terminals the case creates so that they are embedded in the
// case's tool call and released at its end whatever happened.
type tester struct {
	conn  *acp.AgentConn
	tap   *wireTap
	sid   acp.SessionID
	cwd   string
	embed func(ctx context.Context, live []acp.TerminalID)

	mu       sync.Mutex
	terms    []acp.TerminalID
	released map[acp.TerminalID]bool
	stalled  string // the first method left without an answer when its ctx expired
}

// sh is the explicit argv sh -c SCRIPT acpterm-probe ARGS... in the
// session's cwd. Inside SCRIPT, $1... are ARGS.
func (t *tester) sh(script string, args ...string) *acp.CreateTerminalRequest {
	return &acp.CreateTerminalRequest{
		SessionID: t.sid,
		Command:   "sh",
		Args:      append([]string{"-c", script, "acpterm-probe"}, args...),
		Cwd:       acp.Ptr(t.cwd),
	}
}

// create sends terminal/create and embeds the new terminal in the case's
// tool call.
//
// A session/cancel does not abandon a create: the client may already have
// started the command, and an answer dropped on the floor would leave a
// terminal that nobody releases. Only the case's time limit does.
func (t *tester) create(ctx context.Context, req *acp.CreateTerminalRequest) (acp.TerminalID, error) {
	cctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		cctx, cancel = context.WithDeadline(cctx, dl)
		defer cancel()
	}
	start := time.Now()
	h, err := t.conn.CreateTerminal(cctx, req)
	if err != nil {
		return "", t.callErr(acp.MethodTerminalCreate, err, start)
	}
	t.mu.Lock()
	t.terms = append(t.terms, h.ID)
	live, _ := t.unreleasedLocked()
	t.mu.Unlock()
	t.embed(ctx, live)
	return h.ID, nil
}

func (t *tester) output(ctx context.Context, id acp.TerminalID) (*acp.TerminalOutputResponse, error) {
	start := time.Now()
	out, err := t.conn.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: t.sid, TerminalID: id})
	return out, t.callErr(acp.MethodTerminalOutput, err, start)
}

func (t *tester) wait(ctx context.Context, id acp.TerminalID) (*acp.WaitForTerminalExitResponse, error) {
	start := time.Now()
	st, err := t.conn.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: t.sid, TerminalID: id})
	return st, t.callErr(acp.MethodTerminalWaitForExit, err, start)
}

func (t *tester) kill(ctx context.Context, id acp.TerminalID) error {
	start := time.Now()
	_, err := t.conn.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: t.sid, TerminalID: id})
	return t.callErr(acp.MethodTerminalKill, err, start)
}

// release sends terminal/release. The terminal counts as released by the
// case from then on, whatever the answer.
func (t *tester) release(ctx context.Context, id acp.TerminalID) error {
	t.mu.Lock()
	if t.released == nil {
		t.released = map[acp.TerminalID]bool{}
	}
	t.released[id] = true
	t.mu.Unlock()
	start := time.Now()
	_, err := t.conn.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: t.sid, TerminalID: id})
	return t.callErr(acp.MethodTerminalRelease, err, start)
}

// unreleased returns the case's terminals, and whether none of them has
// been released yet.
func (t *tester) unreleased() ([]acp.TerminalID, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unreleasedLocked()
}

func (t *tester) unreleasedLocked() ([]acp.TerminalID, bool) {
	var live []acp.TerminalID
	for _, id := range t.terms {
		if !t.released[id] {
			live = append(live, id)
		}
	}
	return live, len(live) == len(t.terms)
}

// releaseAll releases what the case left, concurrently: a client that is
// slow to release should cost finishTimeout once, not per terminal.
func (t *tester) releaseAll(ctx context.Context) {
	live, _ := t.unreleased()
	var wg sync.WaitGroup
	for _, id := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = t.release(ctx, id)
		}()
	}
	wg.Wait()
}

// callError describes a failed call for a report: which method, and what
// came back (an error object, or no answer in time).
type callError struct {
	method string
	err    error
	after  time.Duration
}

func (t *tester) callErr(method string, err error, start time.Time) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// The first call to run out of time is the one the client left
		// unanswered; later ones may just have found the time already up.
		t.mu.Lock()
		if t.stalled == "" {
			t.stalled = method
		}
		t.mu.Unlock()
	}
	return &callError{method: method, err: err, after: time.Since(start)}
}

func (t *tester) stalledMethod() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stalled
}

func (e *callError) Error() string {
	return e.method + ": " + describeErr(e.err, e.after)
}

func (e *callError) Unwrap() error { return e.err }

// describeErr renders an error the way a report shows it.
func describeErr(err error, after time.Duration) string {
	var ae *acp.Error
	switch {
	case errors.As(err, &ae):
		return fmt.Sprintf("error %d %q", ae.Code, ae.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer after %v", dur(after))
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, acp.ErrConnClosed):
		return "connection closed"
	}
	return err.Error()
}

// refused checks that a call was answered with an error, as it must be for
// an invalid terminal. It returns a short account either way.
func refused(err error) (ok bool, account string) {
	var ae *acp.Error
	if errors.As(err, &ae) {
		return true, fmt.Sprintf("error %d", ae.Code)
	}
	if err == nil {
		return false, "succeeded"
	}
	var ce *callError
	if errors.As(err, &ce) {
		return false, describeErr(ce.err, ce.after)
	}
	return false, err.Error()
}

// dur rounds a duration for a report.
func dur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

// status renders an exit status.
func status(code *uint32, signal *string) string {
	switch {
	case code != nil && signal != nil:
		return fmt.Sprintf("signal %q with exitCode %d", *signal, *code)
	case signal != nil:
		return fmt.Sprintf("signal %q", *signal)
	case code != nil:
		return fmt.Sprintf("exitCode %d", *code)
	}
	return "neither exitCode nor signal"
}

func waitStatus(st *acp.WaitForTerminalExitResponse) string { return status(st.ExitCode, st.Signal) }

func exitStatus(st *acp.TerminalExitStatus) string {
	if st == nil {
		return "no exitStatus"
	}
	return "exitStatus " + status(st.ExitCode, st.Signal)
}

func sameStatus(code1 *uint32, sig1 *string, code2 *uint32, sig2 *string) bool {
	eqU := func(a, b *uint32) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	eqS := func(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	return eqU(code1, code2) && eqS(sig1, sig2)
}

func hasCode(code *uint32, want uint32) bool { return code != nil && *code == want }

// within derives a context that ends after d: a case's own, shorter limit
// for something that should be quick.
func within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// expired reports that sub ran out of time while the case's ctx did not.
func expired(ctx, sub context.Context) bool {
	return ctx.Err() == nil && errors.Is(sub.Err(), context.DeadlineExceeded)
}

// poll calls f every interval until it reports done, or until d passes
// (false). Polling is the only way an agent sees a running command: ACP
// pushes no output to the agent.
func poll(ctx context.Context, d, every time.Duration, f func() (bool, error)) (bool, error) {
	ctx, cancel := within(ctx, d)
	defer cancel()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		done, err := f()
		if done || err != nil {
			return done, err
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-tick.C:
		}
	}
}

// pause waits d unless ctx ends first. The one use is to give a client a
// moment for something nothing on the wire can show.
func pause(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}
