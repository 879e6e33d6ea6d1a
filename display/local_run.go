package display

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// The steps of RunLocalCommand: create the terminal (createLocal), stream
// its output while waiting for its exit (stream, follow), then complete the
// tool call and release the terminal (complete). A localRun holds what
// the steps share.

// localRun is one RunLocalCommand: the terminal it created, the stream
// that shows it to the client, and the result so far.
type localRun struct {
	a        *acp.AgentConn
	terms    LocalTerminals
	sid      acp.SessionID
	tid      acp.TerminalID
	limit    uint64 // the terminal's output limit
	res      *CommandResult
	st       *displayStream
	buf      *streamBuffer
	released bool
	// finish bounds the closing calls, from the exit on or once ctx
	// ended. It is made on first use, so that its time runs from then, and
	// kept here for the calls that follow; it is detached from ctx so that
	// they happen after a cancel too.
	finish     context.Context
	stopFinish context.CancelFunc
	stopWatch  context.CancelFunc // ends the output watcher (stream)
}

// localExit is the answer of terminal/wait_for_exit.
type localExit struct {
	st  *acp.WaitForTerminalExitResponse
	err error
}

// createLocal creates the terminal in terms, with DefaultLocalOutputLimit
// when req has no outputByteLimit, and returns the run and the request
// as made.
func createLocal(ctx context.Context, a *acp.AgentConn, terms LocalTerminals, req *acp.CreateTerminalRequest, opts *LocalCommandOptions) (*localRun, *acp.CreateTerminalRequest, error) {
	form := opts.Form
	if form == FormAuto {
		form = ClientForm(a.ClientCapabilities())
		if a.ProtocolVersion() == acp.ProtocolVersion2 {
			form = FormTerminalUpdate // v2's own terminal updates
		}
	}
	creq := *req
	limit := uint64(DefaultLocalOutputLimit)
	if req.OutputByteLimit != nil {
		limit = *req.OutputByteLimit
	}
	creq.OutputByteLimit = &limit
	created, err := terms.CreateTerminal(ctx, &creq)
	if err != nil {
		return nil, nil, err
	}
	r := &localRun{a: a, terms: terms, sid: req.SessionID, tid: created.TerminalID, limit: limit}
	if form == FormTerminalUpdate {
		// A v2 client may stop it (terminal/cancel): the kill ends the
		// command, and the run reports its exit as for any other.
		sid, tid := r.sid, r.tid
		kill := func() {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			defer cancel()
			_, _ = terms.KillTerminal(kctx, &acp.KillTerminalRequest{SessionID: sid, TerminalID: tid})
		}
		if err := a.CancellableTerminal(ctx, sid, tid, kill); err != nil {
			_, _ = terms.ReleaseTerminal(context.WithoutCancel(ctx), &acp.ReleaseTerminalRequest{SessionID: sid, TerminalID: tid})
			return nil, nil, err
		}
	}
	r.res = &CommandResult{ToolCallID: opts.ToolCallID, TerminalID: r.tid}
	if r.res.ToolCallID == "" {
		r.res.ToolCallID = newToolCallID()
	}
	r.st = &displayStream{a: a, sid: r.sid, tid: r.tid, call: r.res.ToolCallID, form: form}
	return r, &creq, nil
}

// closing is the context of the closing calls (localRun.finish).
func (r *localRun) closing(ctx context.Context) context.Context {
	if r.finish == nil {
		r.finish, r.stopFinish = context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	}
	return r.finish
}

func (r *localRun) release(ctx context.Context) error {
	r.released = true
	_, err := r.terms.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: r.sid, TerminalID: r.tid})
	return err
}

// close ends the run on every path: it frees the closing context and
// releases the terminal if an error came before complete did, on a bounded
// context of its own.
func (r *localRun) close(ctx context.Context) {
	if r.stopFinish != nil {
		r.stopFinish()
	}
	if !r.released {
		finish, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		_ = r.release(finish)
	}
}

// stream waits for the command's exit, killing it if opts.Timeout expires
// or ctx ends, while a watcher feeds its output to the stream buffer and
// follow sends it live; it returns once the command has exited and its
// output ended. The waiter and the watcher run beside follow; the watcher
// is joined before stream returns, the waiter ends with waitCtx.
func (r *localRun) stream(ctx context.Context, opts *LocalCommandOptions) (*acp.WaitForTerminalExitResponse, error) {
	waitCtx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	if opts.Timeout > 0 {
		var cancelTimeout context.CancelFunc
		waitCtx, cancelTimeout = context.WithTimeout(waitCtx, opts.Timeout)
		defer cancelTimeout()
	}
	exited := make(chan localExit, 1)
	go func() {
		st, err := r.terms.WaitForTerminalExit(waitCtx, &acp.WaitForTerminalExitRequest{SessionID: r.sid, TerminalID: r.tid})
		exited <- localExit{st, err}
	}()
	r.buf = newStreamBuffer(int(min(r.limit, 1<<62)), opts.ChunkBytes, r.st.form)
	stopWatching := r.watch(ctx)
	defer stopWatching()

	interval := time.Second / time.Duration(updatesPerSecond(opts.UpdatesPerSecond))
	st, err := r.follow(ctx, exited, cancelWait, interval)
	if err == nil {
		r.closing(ctx) // the closing calls are bounded from here on
	}
	return st, err
}

// watch starts the watcher of the command's output, which fills r.buf, and
// returns the function that stops it and waits for it. The text form has
// no live output: the buffer ends at once.
func (r *localRun) watch(ctx context.Context) (stop func()) {
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	r.stopWatch = stopWatch
	var watching sync.WaitGroup
	if r.st.form == FormText {
		r.buf.end(nil)
	} else {
		watching.Add(1)
		go func() {
			defer watching.Done()
			err := r.terms.WatchTerminalOutput(watchCtx, r.sid, r.tid, r.buf.write)
			r.buf.end(err)
		}()
	}
	return func() { stopWatch(); watching.Wait() }
}

// follow is the sender loop: it sends the buffered output as live updates,
// paced, until the exit status has come and the output ended. The end of
// the connection ends the wait (cancelWait): nobody sees the stream or the
// result then, and the command is killed as on a cancel, as RunCommand's
// wait for the client's command fails then, even when ctx is not the
// connection's. Once the command has exited, its output ends soon, unless
// descendants keep the pipe busy; the runtime bounds that, and so does a
// timer here that stops the watcher.
func (r *localRun) follow(ctx context.Context, exited <-chan localExit, cancelWait context.CancelFunc, interval time.Duration) (*acp.WaitForTerminalExitResponse, error) {
	pace := newPacer(interval)
	defer pace.stop()
	drain := time.NewTimer(finishTimeout)
	drain.Stop()
	defer drain.Stop()
	var drainC <-chan time.Time
	connDone, gone := r.a.Done(), false
	var st *acp.WaitForTerminalExitResponse
	for st == nil || !r.buf.ended() {
		select {
		case <-r.buf.wake:
		case <-pace.C:
			pace.C = nil
		case <-connDone:
			connDone, gone = nil, true
			cancelWait()
		case e := <-exited:
			exited = nil
			var err error
			if st, err = r.exit(ctx, e, gone); err != nil {
				return nil, err
			}
			drain.Reset(finishTimeout)
			drainC = drain.C
		case <-drainC:
			drainC = nil
			r.stopWatch()
		}
		if err := r.sendLive(ctx, pace, st != nil); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// exit takes the waiter's answer. A timeout, a cancel or the end of the
// connection (gone) kills the command, and the exit status is waited for
// on the closing context; the output then ends and the status follows. An
// exit status that cannot be read fails the tool call.
func (r *localRun) exit(ctx context.Context, e localExit, gone bool) (*acp.WaitForTerminalExitResponse, error) {
	if e.err != nil {
		r.res.Cancelled = ctx.Err() != nil
		r.res.TimedOut = !r.res.Cancelled && errors.Is(e.err, context.DeadlineExceeded)
		if r.res.Cancelled || r.res.TimedOut || gone {
			if _, err := r.terms.KillTerminal(r.closing(ctx), &acp.KillTerminalRequest{SessionID: r.sid, TerminalID: r.tid}); err != nil {
				return nil, err
			}
			e.st, e.err = r.terms.WaitForTerminalExit(r.closing(ctx), &acp.WaitForTerminalExitRequest{SessionID: r.sid, TerminalID: r.tid})
		}
	}
	if e.err != nil {
		failLocal(r.closing(ctx), r.a, r.st, r.res, "the exit status could not be read: "+e.err.Error())
		return nil, e.err
	}
	return e.st, nil
}

// sendLive sends the next live update, if output is pending and the pace
// allows it: on ctx while the command runs, on the closing context once
// it has exited or ctx ended. An error of a context that ended is not
// one: the final update still follows.
func (r *localRun) sendLive(ctx context.Context, pace *pacer, exited bool) error {
	if !r.buf.pending() || !pace.ready() {
		return nil
	}
	sendCtx := ctx
	if exited || ctx.Err() != nil {
		sendCtx = r.closing(ctx)
	}
	if err := r.st.sendChunk(sendCtx, r.buf); err != nil && sendCtx.Err() == nil {
		return err
	}
	pace.sent()
	return nil
}

// complete ends the run once the command has exited: it reads the final
// output, completes the tool call (completed for a zero exit, else failed)
// and releases the terminal, all on the closing context.
func (r *localRun) complete(ctx context.Context, st *acp.WaitForTerminalExitResponse, outputText int) (*CommandResult, error) {
	finish, res := r.closing(ctx), r.res
	res.ExitStatus = exitStatus(st)
	out, err := r.terms.TerminalOutput(finish, &acp.TerminalOutputRequest{SessionID: r.sid, TerminalID: r.tid})
	if err != nil {
		failLocal(finish, r.a, r.st, res, res.Status()+"; the output could not be read: "+err.Error())
		return res, err
	}
	res.Output, res.Truncated = out.Output, out.Truncated
	if err := r.st.finish(finish, res, outputTextLimit(outputText)); err != nil {
		return res, err
	}
	if err := r.release(finish); err != nil {
		return res, err
	}
	if res.Cancelled {
		return res, ctx.Err()
	}
	return res, nil
}

// pacer spaces the live updates: the first goes out at once, each later
// one at least interval after the one before. While an update waits for
// its turn, C delivers when it is due.
type pacer struct {
	interval time.Duration
	last     time.Time // of the last update; zero sends the next at once
	timer    *time.Timer
	C        <-chan time.Time // nil unless an update waits
}

func newPacer(interval time.Duration) *pacer {
	p := &pacer{interval: interval, timer: time.NewTimer(time.Hour)}
	p.timer.Stop()
	return p
}

// ready reports whether an update may go now; if not, it makes sure that
// C will deliver when it may.
func (p *pacer) ready() bool {
	if p.C != nil {
		return false
	}
	if wait := p.interval - time.Since(p.last); !p.last.IsZero() && wait > 0 {
		p.timer.Reset(wait)
		p.C = p.timer.C
		return false
	}
	return true
}

// sent records an update that went out.
func (p *pacer) sent() { p.last = time.Now() }

func (p *pacer) stop() { p.timer.Stop() }

func updatesPerSecond(n int) int {
	if n <= 0 {
		return DefaultUpdatesPerSecond
	}
	return n
}

// failLocal marks the tool call failed after an error, best effort, with
// the exit of the display terminal so that it does not look alive.
func failLocal(ctx context.Context, a *acp.AgentConn, st *displayStream, res *CommandResult, text string) {
	update := st.finalUpdate(res, acp.ToolCallStatusFailed)
	update.Content = append(update.Content, acp.TextToolCallContent(text))
	st.sendExit(ctx, res)
	_ = a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: st.sid, Update: update})
}
