package mcpexec

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/randhex"
	"github.com/acpterm/acpterm/terminal"
)

// reserve makes a session for a command about to start, held by the
// caller, or fails when MaxSessions are running.
func (s *Server) reserve(cmd string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("exec_command: the server is shutting down")
	}
	if len(s.sessions) >= s.maxSess {
		return nil, fmt.Errorf("exec_command: %d sessions are running, the most this server keeps; "+
			"end one first (write_stdin to finish it, kill_session to stop it; list_sessions lists them)", s.maxSess)
	}
	sess := &session{id: s.nextID, cmd: cmd, busy: true}
	s.nextID++
	s.sessions[sess.id] = sess
	return sess, nil
}

// forget drops a session whose command never started.
func (s *Server) forget(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.mu.Unlock()
}

// end kills the session's command if it still runs, frees it and forgets
// the session. The caller holds the session.
func (s *Server) end(sess *session) {
	if sess.sub != nil {
		sess.sub.Close()
	}
	// A Manager's release is bounded by its KillGrace, and a released or
	// closed one answers at once; a remote runtime's, by this too.
	if sess.info.TerminalID != "" {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		_, _ = s.rt.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: s.sid, TerminalID: sess.info.TerminalID})
		cancel()
	}
	s.forget(sess)
}

// started records the terminal of a session whose command started, and
// its subscription (nil when subscribing failed): list_sessions shows it
// from now on.
func (s *Server) started(sess *session, info terminal.Info, sub terminal.Events) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.info, sess.sub, sess.started = info, sub, time.Now()
}

// describe completes a session's terminal with what its EventCreated
// says of it (the pid, where the command runs).
func (s *Server) describe(sess *session, info *terminal.Info) {
	if info == nil || info.TerminalID != sess.info.TerminalID {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Field by field: TerminalID, the same, is read without the lock.
	in := &sess.info
	in.PID, in.Cwd, in.Argv, in.Shell, in.Where, in.Sandbox = info.PID, info.Cwd, info.Argv, info.Shell, info.Where, info.Sandbox
	in.PTY, in.Stdin, in.OutputByteLimit = info.PTY, info.Stdin, info.OutputByteLimit
	if !info.Started.IsZero() {
		sess.started = info.Started
	}
	// A runtime that put it on a pty all the same (an exec server of an
	// earlier release, whose default is one): render it as one.
	sess.tty = sess.tty || info.PTY != nil
}

// exitStatus is how a terminal's command ended, nil while it runs: a
// Manager's snapshot, or what terminal/output says on another runtime.
func (s *Server) exitStatus(ctx context.Context, id acp.TerminalID) (*terminal.ExitStatus, error) {
	if m, ok := s.rt.(*terminal.Manager); ok {
		snap, err := m.Snapshot(s.sid, id)
		return snap.ExitStatus, err
	}
	out, err := s.rt.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: s.sid, TerminalID: id})
	if err != nil {
		return nil, err
	}
	return out.ExitStatus, nil
}

// take gives the caller the session with the given ID, which no other
// call may use until put or end.
func (s *Server) take(id int) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	switch {
	case sess == nil:
		return nil, fmt.Errorf("write_stdin: no session %d: its command has ended and its end was reported, or it never existed (list_sessions lists the running ones)", id)
	case sess.busy:
		return nil, fmt.Errorf("write_stdin: session %d is in use by another call; wait for it", id)
	}
	sess.busy = true
	return sess, nil
}

// put hands a session back for the next call.
func (s *Server) put(sess *session) {
	s.mu.Lock()
	sess.busy = false
	s.mu.Unlock()
}

// listSessions serves list_sessions.
func (c *call) listSessions(raw json.RawMessage) (string, error) {
	if err := decodeObject(toolList, raw, &struct{}{}); err != nil {
		return "", err
	}
	type listed struct {
		id      int
		cmd     string
		info    terminal.Info
		started time.Time
	}
	c.s.mu.Lock()
	list := make([]listed, 0, len(c.s.sessions))
	for _, sess := range c.s.sessions {
		if !sess.started.IsZero() {
			list = append(list, listed{sess.id, sess.cmd, sess.info, sess.started})
		}
	}
	c.s.mu.Unlock()
	if len(list) == 0 {
		return "No sessions are running.", nil
	}
	slices.SortFunc(list, func(a, b listed) int { return a.id - b.id })
	var b strings.Builder
	for _, sess := range list {
		state := "running"
		if st, err := c.s.exitStatus(c.ctx, sess.info.TerminalID); err == nil && st != nil {
			state = "ended (" + st.String() + "), not yet reported: call write_stdin to read its output"
		}
		fmt.Fprintf(&b, "session %d: %s for %.1f s, pid %d, in %s: %s\n", sess.id, state,
			time.Since(sess.started).Seconds(), sess.info.PID, sess.info.Cwd, oneLine(sess.cmd, 200))
	}
	return b.String(), nil
}

// killSession serves kill_session: SIGTERM to the command and all it
// started, SIGKILL after the grace period, then the answer write_stdin
// would give, with the exit.
func (c *call) killSession(raw json.RawMessage) (string, error) {
	c.started = time.Now()
	a, err := decodeSession(toolKill, raw)
	if err != nil {
		return "", err
	}
	c.s.mu.Lock()
	sess := c.s.sessions[a.SessionID]
	busy := sess != nil && sess.busy
	if sess != nil && !busy {
		sess.busy = true
	}
	c.s.mu.Unlock()
	switch {
	case sess == nil:
		return "", fmt.Errorf("kill_session: no session %d (list_sessions lists the running ones)", a.SessionID)
	case busy:
		// The call that holds it sees the exit and reports it.
		if err := c.s.kill(c.ctx, sess.info.TerminalID); err != nil {
			return "", fmt.Errorf("kill_session: %v", err)
		}
		return fmt.Sprintf("Session %d was killed; the call waiting on it reports its output.", a.SessionID), nil
	}
	if err := c.s.kill(c.ctx, sess.info.TerminalID); err != nil {
		c.s.put(sess)
		return "", fmt.Errorf("kill_session: %v", err)
	}
	// The exit is published once the output was read: collect until it.
	r, err := c.collect(sess, MaxYield, DefaultMaxOutputTokens)
	if err != nil {
		c.s.put(sess)
		return "", err
	}
	return c.finish(sess, r), nil
}

// format renders a result as Codex's exec tools do, which models are
// trained to read.
func (r *result) format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %s\n", randhex.String(3))
	fmt.Fprintf(&b, "Wall time: %.4f seconds\n", r.wall.Seconds())
	switch {
	case r.status == nil:
		fmt.Fprintf(&b, "Process running with session ID %d\n", r.sessionID)
	case r.status.ExitCode != nil:
		fmt.Fprintf(&b, "Process exited with code %d\n", *r.status.ExitCode)
	case r.status.Signal != nil:
		fmt.Fprintf(&b, "Process killed by %s\n", *r.status.Signal)
	default:
		b.WriteString("Process ended; its exit status is unknown\n")
	}
	if r.out.truncated() {
		fmt.Fprintf(&b, "Original token count: %d\n", r.out.tokens())
	}
	if r.note != "" {
		b.WriteString(r.note + "\n")
	}
	b.WriteString("Output:\n")
	b.WriteString(r.out.text())
	return b.String()
}

// oneLine shortens s to one line of at most n bytes, for listings.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// kill kills a terminal's command (terminal/kill), keeping the terminal.
func (s *Server) kill(ctx context.Context, id acp.TerminalID) error {
	_, err := s.rt.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: s.sid, TerminalID: id})
	return err
}
