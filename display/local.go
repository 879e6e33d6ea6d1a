package display

import (
	"context"

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
	// FormTerminalUpdate, else FormZedMeta, else FormText (see ClientForm);
	// on a connection that negotiated ACP v2, FormTerminalUpdate, whose
	// terminal the client may then cancel (terminal/cancel).
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
	r, creq, err := createLocal(ctx, a, terms, req, opts)
	if err != nil {
		return nil, err
	}
	defer r.close(ctx)
	if err := r.st.announce(ctx, creq, opts.Title); err != nil && ctx.Err() == nil {
		return nil, err
	}
	// A cancel that ended the announcement may have come after it was
	// written: go on, so that the kill and the final update happen as for
	// any cancel.
	exit, err := r.stream(ctx, opts)
	if err != nil {
		return r.res, err
	}
	return r.complete(ctx, exit, opts.OutputText)
}
