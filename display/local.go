package display

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// LocalTerminals is the agent's own terminal runtime, as RunLocalCommand
// uses it: the five terminal methods, served in the agent's process instead
// of by the client, and a way to watch a terminal's output as it is
// written. A *terminal.Manager is one, with its limits, process groups
// and sandbox policy.
type LocalTerminals interface {
	acp.TerminalHandler
	// WatchTerminalOutput calls fn with the terminal's output in the order
	// it was written, from its start, until the output ends (the command
	// exited and its output was drained), when it returns nil, or ctx ends,
	// when it returns ctx's error. dropped counts the bytes just before
	// data that the runtime did not deliver because the watcher fell
	// behind. fn must not keep data after it returns.
	WatchTerminalOutput(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, fn func(data []byte, dropped uint64)) error
}

// Form is how RunLocalCommand shows a running command to the client: the
// wire form of its display terminal, or none. Its String is a short word
// for logs ("auto", "text", "meta", "v2").
type Form int

const (
	// FormAuto picks the best form the client advertised:
	// FormTerminalUpdate, else FormZedMeta, else FormText (see ClientForm).
	FormAuto Form = iota
	// FormText sends no live output: the finished tool call carries the
	// output's tail as text, which every client shows.
	FormText
	// FormZedMeta streams Zed's _meta display terminal
	// (MetaTerminalInfo, MetaTerminalOutput, MetaTerminalExit).
	FormZedMeta
	// FormTerminalUpdate streams the v2 draft's terminal_update and
	// terminal_output_chunk session updates (TerminalUpdate,
	// TerminalOutputChunk) inside a v1 session.
	FormTerminalUpdate
)

func (f Form) String() string {
	switch f {
	case FormAuto:
		return "auto"
	case FormText:
		return "text"
	case FormZedMeta:
		return "meta"
	case FormTerminalUpdate:
		return "v2"
	}
	return "Form(?)"
}

// ClientForm is the best form caps allow: FormTerminalUpdate when
// _meta[MetaTerminalUpdate] is true, FormZedMeta when
// _meta[MetaTerminalOutput] is true, else FormText.
func ClientForm(caps acp.ClientCapabilities) Form {
	switch {
	case ClientRendersMeta(caps, MetaTerminalUpdate):
		return FormTerminalUpdate
	case ClientRendersMeta(caps, MetaTerminalOutput):
		return FormZedMeta
	}
	return FormText
}

// Defaults of LocalCommandOptions.
const (
	// DefaultLocalOutputLimit is the output limit of a local command whose
	// request has no outputByteLimit: the terminal keeps that much of the
	// output, and the live stream sends at most that many bytes.
	DefaultLocalOutputLimit = 1 << 20
	// DefaultUpdatesPerSecond bounds the live output updates of a command.
	DefaultUpdatesPerSecond = 10
	// DefaultChunkBytes bounds the output bytes in one live update.
	DefaultChunkBytes = 64 << 10
)

// LocalCommandOptions tunes RunLocalCommand. A nil *LocalCommandOptions
// means defaults.
type LocalCommandOptions struct {
	// ToolCallID, Title, Timeout and OutputText are as for RunCommand.
	CommandOptions
	// Form chooses the form of the live output; FormAuto (zero) follows
	// the client's capabilities.
	Form Form
	// UpdatesPerSecond bounds the live output updates; 0 means
	// DefaultUpdatesPerSecond.
	UpdatesPerSecond int
	// ChunkBytes bounds the output bytes in one live update; 0 means
	// DefaultChunkBytes.
	ChunkBytes int
}

// RunLocalCommand is the local counterpart of RunCommand: it runs one
// command in the agent's own terminal runtime (terms) rather than in the
// client's, and streams it to the client as a display terminal in the
// form opts.Form chooses (by default the best the client advertised, see
// ClientForm):
//
//  1. create the terminal in terms (req.OutputByteLimit absent means
//     DefaultLocalOutputLimit);
//  2. announce the tool call (kind execute, in_progress), with the
//     terminal embedded as a display anchor and, in the _meta form,
//     _meta.terminal_info; the v2 form sends a terminal_update with the
//     command and cwd first;
//  3. stream the output as it comes (below), killing the command if
//     opts.Timeout expires or ctx ends;
//  4. complete the tool call as RunCommand does: completed for a zero exit,
//     else failed, the exit status in rawOutput and, after the terminal
//     anchor, the tail of the final output and the status as text, which
//     every client shows; the _meta form adds _meta.terminal_exit, the v2
//     form sends a terminal_update with the exitStatus before it;
//  5. release the terminal.
//
// The stream is coalesced and bounded. The first output goes out at once;
// after it, at most opts.UpdatesPerSecond updates a second, each with at
// most opts.ChunkBytes bytes of output. Output that comes faster is
// dropped from the front, keeping the newest, and the next update starts
// with a line saying how many bytes were skipped. The JSON-RPC messages
// of the stream take at most the output limit in bytes all told (counted
// as encoded, envelope included); when that budget is spent the stream
// says so and stops, and only the final update follows. So, however much
// the command writes, the bytes on the wire are at most the output limit
// plus the announcement and the final update (the title, command and cwd,
// and at most opts.OutputText bytes of output as JSON text), and the
// agent holds O(output limit) of it in memory.
//
// Errors and cancellation are as for RunCommand: on a cancelled ctx the
// command is killed, the tool call marked failed, and the partial result
// returned with ctx's error. When the connection ends while the command
// runs, whatever ctx is, the command is killed too and the error wraps
// ErrConnClosed: the client's wait in RunCommand would fail the same way.
func RunLocalCommand(ctx context.Context, a *acp.AgentConn, terms LocalTerminals, req *acp.CreateTerminalRequest, opts *LocalCommandOptions) (*CommandResult, error) {
	if opts == nil {
		opts = &LocalCommandOptions{}
	}
	form := opts.Form
	if form == FormAuto {
		form = ClientForm(a.ClientCapabilities())
	}
	creq := *req
	limit := uint64(DefaultLocalOutputLimit)
	if req.OutputByteLimit != nil {
		limit = *req.OutputByteLimit
	}
	creq.OutputByteLimit = &limit
	created, err := terms.CreateTerminal(ctx, &creq)
	if err != nil {
		return nil, err
	}
	tid := created.TerminalID
	sid := req.SessionID
	released := false
	release := func(ctx context.Context) error {
		released = true
		_, err := terms.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: sid, TerminalID: tid})
		return err
	}
	defer func() {
		if !released {
			finish, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			defer cancel()
			_ = release(finish)
		}
	}()

	res := &CommandResult{ToolCallID: opts.ToolCallID, TerminalID: tid}
	if res.ToolCallID == "" {
		res.ToolCallID = newToolCallID()
	}
	st := &displayStream{a: a, sid: sid, tid: tid, call: res.ToolCallID, form: form}
	if err := st.announce(ctx, &creq, opts.Title); err != nil && ctx.Err() == nil {
		return nil, err
	}

	// The watcher and the waiter run beside the sender loop below, which
	// joins both before it returns. The end of the connection ends the wait
	// too (see gone below).
	waitCtx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	if opts.Timeout > 0 {
		var cancelTimeout context.CancelFunc
		waitCtx, cancelTimeout = context.WithTimeout(waitCtx, opts.Timeout)
		defer cancelTimeout()
	}
	type exit struct {
		st  *acp.WaitForTerminalExitResponse
		err error
	}
	exited := make(chan exit, 1)
	go func() {
		r, err := terms.WaitForTerminalExit(waitCtx, &acp.WaitForTerminalExitRequest{SessionID: sid, TerminalID: tid})
		exited <- exit{r, err}
	}()
	buf := newStreamBuffer(int(min(limit, 1<<62)), opts.ChunkBytes, form)
	var stopFinish context.CancelFunc
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	var watching sync.WaitGroup
	defer func() { stopWatch(); watching.Wait() }()
	if form != FormText {
		watching.Add(1)
		go func() {
			defer watching.Done()
			err := terms.WatchTerminalOutput(watchCtx, sid, tid, buf.write)
			buf.end(err)
		}()
	} else {
		buf.end(nil)
	}

	// finish bounds the closing calls, from the exit on or once ctx ended;
	// it is detached from ctx so that they happen after a cancel too.
	var finish context.Context
	closing := func() context.Context {
		if finish == nil {
			var cancel context.CancelFunc
			finish, cancel = context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			stopFinish = cancel
		}
		return finish
	}
	defer func() {
		if stopFinish != nil {
			stopFinish()
		}
	}()
	interval := time.Second / time.Duration(updatesPerSecond(opts.UpdatesPerSecond))
	var last time.Time // of the last live update; zero sends the first at once
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var timerC, drainC <-chan time.Time
	// gone: the connection ended, so nobody sees the stream or the result.
	// The command is killed as on a cancel, as RunCommand's wait for the
	// client's command fails then, even when ctx is not the connection's.
	connDone, gone := a.Done(), false
	exitC := (<-chan exit)(exited)
	var ex *exit
	for ex == nil || !buf.ended() {
		select {
		case <-buf.wake:
		case <-timerC:
			timerC = nil
		case <-connDone:
			connDone, gone = nil, true
			cancelWait()
		case e := <-exitC:
			exitC, ex = nil, &e
			if e.err != nil {
				// Timeout, cancel or the end of the connection: kill;
				// the output then ends and the exit status follows.
				res.Cancelled = ctx.Err() != nil
				res.TimedOut = !res.Cancelled && errors.Is(e.err, context.DeadlineExceeded)
				if res.Cancelled || res.TimedOut || gone {
					if _, kerr := terms.KillTerminal(closing(), &acp.KillTerminalRequest{SessionID: sid, TerminalID: tid}); kerr != nil {
						return res, kerr
					}
					r, err := terms.WaitForTerminalExit(closing(), &acp.WaitForTerminalExitRequest{SessionID: sid, TerminalID: tid})
					ex = &exit{r, err}
				}
			}
			if ex.err != nil {
				failLocal(closing(), a, st, res, "the exit status could not be read: "+ex.err.Error())
				return res, ex.err
			}
			// The output ends soon after the exit, unless descendants keep
			// the pipe busy; the runtime bounds that, and so does this.
			drain := time.NewTimer(finishTimeout)
			defer drain.Stop()
			drainC = drain.C
		case <-drainC:
			drainC = nil
			stopWatch()
		}
		if !buf.pending() || timerC != nil {
			continue
		}
		if wait := interval - time.Since(last); !last.IsZero() && wait > 0 {
			timer.Reset(wait)
			timerC = timer.C
			continue
		}
		sendCtx := ctx
		if ex != nil || ctx.Err() != nil {
			sendCtx = closing()
		}
		if err := st.sendChunk(sendCtx, buf); err != nil && sendCtx.Err() == nil {
			return res, err
		}
		last = time.Now()
	}
	finish = closing()
	stopWatch()
	watching.Wait()
	res.ExitStatus = exitStatus(ex.st)

	out, err := terms.TerminalOutput(finish, &acp.TerminalOutputRequest{SessionID: sid, TerminalID: tid})
	if err != nil {
		failLocal(finish, a, st, res, res.Status()+"; the output could not be read: "+err.Error())
		return res, err
	}
	res.Output, res.Truncated = out.Output, out.Truncated

	if err := st.finish(finish, res, outputTextLimit(opts.OutputText)); err != nil {
		return res, err
	}
	if err := release(finish); err != nil {
		return res, err
	}
	if res.Cancelled {
		return res, ctx.Err()
	}
	return res, nil
}

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
