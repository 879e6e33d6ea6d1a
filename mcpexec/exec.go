package mcpexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// session is one command the model started and has not yet seen end.
// Only the call that holds it (busy) reads its events and releases it.
type session struct {
	id      int
	cmd     string // as the model wrote it
	info    terminal.Info
	sub     terminal.Events
	started time.Time
	busy    bool // guarded by Server.mu
	// tty: the command runs on a pty (exec_command's tty), and the model
	// gets its rendered text; shown is what the answers gave of it.
	tty   bool
	shown string
}

// tailLimit is the output the manager keeps of each command: what a
// subscription made just after the create replays, so that the first
// bytes are not lost; the model reads through the subscription.
const tailLimit = 1 << 20

// call is one tools/call being served.
type call struct {
	s             *Server
	ctx           context.Context
	progressToken json.RawMessage
	toolCall      acp.ToolCallID // the _meta's hint, "" for none
	lastProgress  time.Time
	started       time.Time
}

// toolRunners serve the tools by name; each returns the text the model
// gets, or an error that it gets as a tool error.
var toolRunners = map[string]func(*call, json.RawMessage) (string, error){
	toolExec:  (*call).execCommand,
	toolWrite: (*call).writeStdin,
	toolList:  (*call).listSessions,
	toolKill:  (*call).killSession,
}

// execCommand serves exec_command.
func (c *call) execCommand(raw json.RawMessage) (string, error) {
	c.started = time.Now()
	a, err := decodeExec(raw)
	if err != nil {
		return "", err
	}
	sess, err := c.s.reserve(a.Cmd)
	if err != nil {
		return "", err
	}
	cwd := c.s.workdir(a.Workdir)
	req := &acp.CreateTerminalRequest{
		SessionID:       c.s.sid,
		Cwd:             &cwd,
		OutputByteLimit: ptr(uint64(tailLimit)),
		// Pipes, whatever the runtime's default: the model asked for none.
		Meta: acp.Meta{terminal.MetaStdin: json.RawMessage("true"), terminal.MetaPTY: json.RawMessage("false")},
	}
	if a.TTY {
		req.Meta = acp.Meta{terminal.MetaPTY: json.RawMessage("{}")} // the default size
	}
	switch {
	case a.Shell != "":
		req.Command, req.Args = a.Shell, []string{shellFlag(a.Login), a.Cmd}
	case a.Login:
		req.Command, req.Args = c.s.shell, []string{"-lc", a.Cmd}
	default:
		req.Command = a.Cmd // a shell line, run by the runtime's shell
	}
	resp, err := c.s.rt.CreateTerminal(c.ctx, req)
	if err != nil {
		c.s.forget(sess)
		return "", fmt.Errorf("exec_command: %v", err)
	}
	sess.tty = a.TTY
	if c.s.opts.ToolCall != nil {
		c.s.opts.ToolCall(ToolCallHint{SessionID: c.s.sid, TerminalID: resp.TerminalID, ToolCallID: c.toolCall, Arguments: raw})
	}
	// A subscription made after the create replays the terminal from its
	// start (its EventCreated, then its retained output): the command
	// never waits for it, as a held one would make it wait for a model
	// that does not poll.
	sub, err := c.s.rt.Subscribe(c.s.sid, resp.TerminalID)
	c.s.started(sess, terminal.Info{SessionID: c.s.sid, TerminalID: resp.TerminalID, Cwd: cwd}, sub)
	if err != nil {
		c.s.end(sess)
		return "", fmt.Errorf("exec_command: %v", err)
	}
	r, err := c.collect(sess, a.Yield, a.MaxTokens)
	if err != nil {
		// Cancelled: the model never got the session's ID, so nobody
		// could reach the command again.
		c.s.end(sess)
		return "", err
	}
	c.rendered(sess, &r, a.MaxTokens)
	return c.finish(sess, r), nil
}

func shellFlag(login bool) string {
	if login {
		return "-lc"
	}
	return "-c"
}

func ptr[T any](v T) *T { return &v }

// writeStdin serves write_stdin: the input, then what the command wrote
// within the yield time.
func (c *call) writeStdin(raw json.RawMessage) (string, error) {
	c.started = time.Now()
	a, err := decodeWrite(raw)
	if err != nil {
		return "", err
	}
	sess, err := c.s.take(a.SessionID)
	if err != nil {
		return "", err
	}
	note, err := c.input(sess, a)
	if err != nil {
		c.s.put(sess)
		return "", err
	}
	r, err := c.collect(sess, a.Yield, a.MaxTokens)
	if err != nil {
		// Cancelled: the command runs on, and the model still has its ID.
		c.s.put(sess)
		return "", err
	}
	r.note = note
	c.rendered(sess, &r, a.MaxTokens)
	return c.finish(sess, r), nil
}

// eot is Ctrl-D, which ends the input at a terminal: in chars it closes
// the command's stdin after what comes before it.
const eot = "\x04"

// input writes write_stdin's chars and, after a Ctrl-D, closes stdin. It
// returns a note for the answer about what could not be written; an
// error is the call's ctx ending.
func (c *call) input(sess *session, a writeArgs) (string, error) {
	chars, rest, eof := strings.Cut(a.Chars, eot)
	if sess.tty {
		// A terminal's line discipline takes Ctrl-D itself.
		chars, rest, eof = a.Chars, "", false
	}
	var note string
	if chars != "" {
		wctx, cancel := context.WithTimeout(c.ctx, a.Yield)
		n, err := c.s.rt.Write(wctx, c.s.sid, sess.info.TerminalID, []byte(chars))
		cancel()
		switch {
		case c.ctx.Err() != nil:
			return "", c.ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Sprintf("Input: %d of %d bytes written; the command is not reading its input", n, len(chars)), nil
		case errors.Is(err, terminal.ErrStdinClosed):
			return "Input not written: the command's stdin is closed", nil
		case err != nil:
			return fmt.Sprintf("Input not written: %v", err), nil
		}
	}
	if eof {
		if err := c.s.rt.CloseStdin(c.s.sid, sess.info.TerminalID); err != nil {
			return fmt.Sprintf("Input: stdin not closed: %v", err), nil
		}
		if rest != "" {
			note = fmt.Sprintf("Input: stdin closed at the Ctrl-D; the %d bytes after it were not written", len(rest))
		}
	}
	return note, nil
}

// finish formats an answer and lets go of the session: released when
// the command has ended, else free for the next call.
func (c *call) finish(sess *session, r result) string {
	r.wall = time.Since(c.started)
	if r.status != nil {
		c.s.end(sess)
	} else {
		r.sessionID = sess.id
		c.s.put(sess)
	}
	return r.format()
}

// result is what one call saw of a command.
type result struct {
	wall      time.Duration
	status    *terminal.ExitStatus // nil: still running
	sessionID int
	out       *clip
	note      string
}

// collect reads the session's events for up to yield, or until the
// command exits, within maxTokens of output. An error is the call's ctx
// ending.
func (c *call) collect(sess *session, yield time.Duration, maxTokens int) (result, error) {
	r := result{out: newClip(maxTokens * bytesPerToken)}
	yctx, cancel := context.WithTimeout(c.ctx, yield)
	defer cancel()
	for {
		ev, err := sess.sub.Next(yctx)
		switch {
		case err == nil:
		case c.ctx.Err() != nil:
			return r, c.ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return r, nil // still running
		default:
			// The subscription ended without an exit: the server is
			// shutting down, or the subscriber fell too far behind.
			return r, c.endedWithoutExit(sess, &r, err)
		}
		r.out.gap(ev.Dropped)
		switch ev.Kind {
		case terminal.EventCreated:
			c.s.describe(sess, ev.Info)
		case terminal.EventOutput:
			r.out.add(ev.Data)
			c.progress(r.out)
		case terminal.EventExited, terminal.EventReleased:
			r.status = ev.Status
			if r.status == nil {
				r.status = &terminal.ExitStatus{}
			}
			if ev.Lost != "" {
				// A remote runtime lost its target: no status will come.
				r.note = joinNote(r.note, oneLine(ev.Lost, 300))
			}
			return r, nil
		}
	}
}

// endedWithoutExit handles a subscription that ended before the exit:
// the status comes from the terminal itself when it has one.
func (c *call) endedWithoutExit(sess *session, r *result, err error) error {
	if errors.Is(err, terminal.ErrSubscriberOverflow) {
		// Resubscribe: what was lost is counted as a gap by the replay.
		if sub, serr := c.s.rt.Subscribe(c.s.sid, sess.info.TerminalID); serr == nil {
			sess.sub.Close()
			sess.sub = sub
			return nil
		}
	}
	st, serr := c.s.exitStatus(c.ctx, sess.info.TerminalID)
	if serr != nil || st == nil {
		return fmt.Errorf("the command's output is no longer available: %v", err)
	}
	r.status = st
	return nil
}

// progressEvery spaces out progress notifications: a command that writes
// a line a millisecond must not make the client handle a thousand.
const progressEvery = 200 * time.Millisecond

// progress tells a client that asked (a progressToken) how much output
// has come.
func (c *call) progress(out *clip) {
	if c.progressToken == nil || time.Since(c.lastProgress) < progressEvery {
		return
	}
	c.lastProgress = time.Now()
	p := &progressParams{
		ProgressToken: c.progressToken,
		Progress:      float64(out.total),
		Message:       fmt.Sprintf("%d bytes of output so far", out.total),
	}
	<-c.s.ready
	if err := c.s.conn.Notify(c.ctx, methodProgress, p); err != nil {
		c.s.logf("mcpexec: progress: %v", err)
	}
}

// workdir resolves exec_command's workdir against the server's cwd.
func (s *Server) workdir(dir string) string {
	switch {
	case dir == "":
		return s.cwd
	case filepath.IsAbs(dir):
		return filepath.Clean(dir)
	}
	return filepath.Join(s.cwd, dir)
}
