package acp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// LocalTerminals is the agent's own terminal runtime, as RunLocalCommand
// uses it: the five terminal methods, served in the agent's process instead
// of by the client, and a way to watch a terminal's output as it is
// written. A *terminal.Manager is one, with its limits, process groups
// and sandbox policy.
type LocalTerminals interface {
	TerminalHandler
	// WatchTerminalOutput calls fn with the terminal's output in the order
	// it was written, from its start, until the output ends (the command
	// exited and its output was drained), when it returns nil, or ctx ends,
	// when it returns ctx's error. dropped counts the bytes just before
	// data that the runtime did not deliver because the watcher fell
	// behind. fn must not keep data after it returns.
	WatchTerminalOutput(ctx context.Context, sessionID SessionID, terminalID TerminalID, fn func(data []byte, dropped uint64)) error
}

// DisplayForm is how RunLocalCommand shows a running command to the client.
type DisplayForm int

const (
	// DisplayAuto picks the best form the client advertised: DisplayV2,
	// else DisplayMeta, else DisplayText (see ClientDisplayForm).
	DisplayAuto DisplayForm = iota
	// DisplayText sends no live output: the finished tool call carries the
	// output's tail as text, which every client shows.
	DisplayText
	// DisplayMeta streams Zed's _meta display terminal
	// (MetaTerminalInfo, MetaTerminalOutput, MetaTerminalExit).
	DisplayMeta
	// DisplayV2 streams the v2 draft's terminal_update and
	// terminal_output_chunk session updates.
	DisplayV2
)

func (f DisplayForm) String() string {
	switch f {
	case DisplayAuto:
		return "auto"
	case DisplayText:
		return "text"
	case DisplayMeta:
		return "meta"
	case DisplayV2:
		return "v2"
	}
	return "DisplayForm(?)"
}

// ClientDisplayForm is the best display form caps allow: DisplayV2 when
// _meta[MetaTerminalUpdate] is true, DisplayMeta when
// _meta[MetaTerminalOutput] is true, else DisplayText.
func ClientDisplayForm(caps ClientCapabilities) DisplayForm {
	switch {
	case ClientRendersMeta(caps, MetaTerminalUpdate):
		return DisplayV2
	case ClientRendersMeta(caps, MetaTerminalOutput):
		return DisplayMeta
	}
	return DisplayText
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
	// Display chooses the form of the live output; DisplayAuto (zero)
	// follows the client's capabilities.
	Display DisplayForm
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
// form opts.Display chooses (by default the best the client advertised,
// see ClientDisplayForm):
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
func (a *AgentConn) RunLocalCommand(ctx context.Context, terms LocalTerminals, req *CreateTerminalRequest, opts *LocalCommandOptions) (*CommandResult, error) {
	if opts == nil {
		opts = &LocalCommandOptions{}
	}
	form := opts.Display
	if form == DisplayAuto {
		form = ClientDisplayForm(a.ClientCapabilities())
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
		_, err := terms.ReleaseTerminal(ctx, &ReleaseTerminalRequest{SessionID: sid, TerminalID: tid})
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
		st  *WaitForTerminalExitResponse
		err error
	}
	exited := make(chan exit, 1)
	go func() {
		r, err := terms.WaitForTerminalExit(waitCtx, &WaitForTerminalExitRequest{SessionID: sid, TerminalID: tid})
		exited <- exit{r, err}
	}()
	buf := newStreamBuffer(int(min(limit, 1<<62)), opts.ChunkBytes, form)
	var stopFinish context.CancelFunc
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	var watching sync.WaitGroup
	defer func() { stopWatch(); watching.Wait() }()
	if form != DisplayText {
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
					if _, kerr := terms.KillTerminal(closing(), &KillTerminalRequest{SessionID: sid, TerminalID: tid}); kerr != nil {
						return res, kerr
					}
					r, err := terms.WaitForTerminalExit(closing(), &WaitForTerminalExitRequest{SessionID: sid, TerminalID: tid})
					ex = &exit{r, err}
				}
			}
			if ex.err != nil {
				a.failLocal(closing(), st, res, "the exit status could not be read: "+ex.err.Error())
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
	res.ExitCode, res.Signal = ex.st.ExitCode, ex.st.Signal

	out, err := terms.TerminalOutput(finish, &TerminalOutputRequest{SessionID: sid, TerminalID: tid})
	if err != nil {
		a.failLocal(finish, st, res, res.Status()+"; the output could not be read: "+err.Error())
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
func (a *AgentConn) failLocal(ctx context.Context, st *displayStream, res *CommandResult, text string) {
	update := st.finalUpdate(res, ToolCallStatusFailed)
	update.Content = append(update.Content, TextToolCallContent(text))
	st.sendExit(ctx, res)
	_ = a.SessionUpdate(ctx, &SessionNotification{SessionID: st.sid, Update: update})
}

// displayStream sends the updates of one display terminal.
type displayStream struct {
	a    *AgentConn
	sid  SessionID
	tid  TerminalID
	call ToolCallID
	form DisplayForm
	// spent counts the encoded bytes of the live updates sent so far.
	spent   int
	stopped bool // the budget is spent; the stream said so
}

// announce sends the v2 terminal_update (for DisplayV2) and the tool call.
func (s *displayStream) announce(ctx context.Context, req *CreateTerminalRequest, title string) error {
	if title == "" {
		title = commandLine(req)
	}
	call := &ToolCall{ToolCallID: s.call, Title: title, Kind: ToolKindExecute, Status: ToolCallStatusInProgress}
	call.RawInput, _ = json.Marshal(struct {
		Command string   `json:"command"`
		Args    []string `json:"args,omitempty"`
		Cwd     *string  `json:"cwd,omitempty"`
	}{req.Command, req.Args, req.Cwd})
	switch s.form {
	case DisplayMeta:
		info := MetaTerminalInfoValue{TerminalID: s.tid}
		if req.Cwd != nil {
			info.Cwd = *req.Cwd
		}
		call.Meta = metaOf(MetaTerminalInfo, info)
		call.Content = []ToolCallContent{TerminalContent(s.tid)}
	case DisplayV2:
		cmd := commandLine(req)
		tu := &V2TerminalUpdate{TerminalID: V2TerminalID(s.tid), Command: &cmd}
		if req.Cwd != nil {
			tu.Cwd = Ptr(V2AbsolutePath(*req.Cwd))
		}
		u, err := tu.SessionUpdate()
		if err != nil {
			return err
		}
		if err := s.a.SessionUpdate(ctx, &SessionNotification{SessionID: s.sid, Update: u}); err != nil {
			return err
		}
		call.Content = []ToolCallContent{TerminalContent(s.tid)}
	}
	return s.a.SessionUpdate(ctx, &SessionNotification{SessionID: s.sid, Update: call})
}

// metaOf is a _meta with one member.
func metaOf(key string, v any) Meta {
	b, _ := json.Marshal(v)
	return Meta{key: b}
}

// chunkUpdate is the live update that carries data.
func (s *displayStream) chunkUpdate(data []byte) (SessionUpdate, error) {
	if s.form == DisplayV2 {
		return (&V2TerminalOutputChunk{TerminalID: V2TerminalID(s.tid), Data: data}).SessionUpdate()
	}
	return &ToolCallUpdate{ToolCallID: s.call,
		Meta: metaOf(MetaTerminalOutput, MetaTerminalOutputValue{TerminalID: s.tid, Data: string(data)})}, nil
}

// envelope is what the connection adds around a session/update's params.
const envelope = len(`{"jsonrpc":"2.0","method":"session/update","params":}` + "\n")

// wireSize is an upper bound of the bytes u takes on the wire: the
// connection encodes without escaping <, > and &, which json.Marshal does.
func (s *displayStream) wireSize(u SessionUpdate) (int, error) {
	b, err := json.Marshal(&SessionNotification{SessionID: s.sid, Update: u})
	return len(b) + envelope, err
}

// sendChunk sends what buf holds, within the budget. Once the budget is
// spent it sends a last note instead, and nothing after it.
func (s *displayStream) sendChunk(ctx context.Context, buf *streamBuffer) error {
	data := buf.take()
	if s.stopped {
		return nil
	}
	budget := buf.budget - s.spent - stopNoteReserve
	u, size, err := s.fit(data, budget)
	if err != nil {
		return err
	}
	if u == nil {
		// Not even a little fits: say that the live output ends here.
		s.stopped = true
		buf.stop()
		u, size, err = s.fit([]byte(stopNote), buf.budget-s.spent)
		if err != nil || u == nil {
			return err
		}
	}
	s.spent += size
	return s.a.SessionUpdate(ctx, &SessionNotification{SessionID: s.sid, Update: u})
}

// fit is the update carrying data, or its tail, that takes at most budget
// bytes on the wire; nil if no part of it fits with at least a few bytes
// of output.
func (s *displayStream) fit(data []byte, budget int) (SessionUpdate, int, error) {
	for len(data) > 0 {
		u, err := s.chunkUpdate(data)
		if err != nil {
			return nil, 0, err
		}
		size, err := s.wireSize(u)
		if err != nil {
			return nil, 0, err
		}
		if size <= budget {
			return u, size, nil
		}
		over := size - budget
		if over >= len(data) || len(data)-over < minChunk {
			return nil, 0, nil
		}
		data = cutToRune(data[over:], s.form == DisplayMeta)
	}
	return nil, 0, nil
}

// finalUpdate is the tool call's last update, without its text.
func (s *displayStream) finalUpdate(res *CommandResult, status ToolCallStatus) *ToolCallUpdate {
	update := &ToolCallUpdate{ToolCallID: s.call, Status: &status}
	if s.form != DisplayText {
		update.Content = []ToolCallContent{TerminalContent(s.tid)}
	}
	update.RawOutput = res.rawOutput()
	if s.form == DisplayMeta {
		ex := MetaTerminalExitValue{TerminalID: s.tid, Signal: res.Signal}
		if res.ExitCode != nil {
			ex.ExitCode = Ptr(int64(*res.ExitCode))
		}
		update.Meta = metaOf(MetaTerminalExit, ex)
	}
	return update
}

// sendExit sends the v2 terminal_update with the exit status.
func (s *displayStream) sendExit(ctx context.Context, res *CommandResult) error {
	if s.form != DisplayV2 {
		return nil
	}
	es := &V2TerminalExitStatus{Signal: res.Signal}
	if res.ExitCode != nil {
		es.ExitCode = Ptr(int64(*res.ExitCode))
	}
	u, err := (&V2TerminalUpdate{TerminalID: V2TerminalID(s.tid), ExitStatus: es}).SessionUpdate()
	if err != nil {
		return err
	}
	return s.a.SessionUpdate(ctx, &SessionNotification{SessionID: s.sid, Update: u})
}

// finish sends the exit and the completed tool call with the output's
// tail as text (textLimit < 0: no text).
func (s *displayStream) finish(ctx context.Context, res *CommandResult, textLimit int) error {
	if err := s.sendExit(ctx, res); err != nil {
		return err
	}
	status := ToolCallStatusCompleted
	if !res.Succeeded() {
		status = ToolCallStatusFailed
	}
	update := s.finalUpdate(res, status)
	if textLimit >= 0 {
		update.Content = append(update.Content, TextToolCallContent(outputText(res, textLimit)))
	}
	return s.a.SessionUpdate(ctx, &SessionNotification{SessionID: s.sid, Update: update})
}
