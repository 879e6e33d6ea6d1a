package remote

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// The Client's side of terminal.Runtime: the same calls as a local
// terminal.Manager's, answered by the exec server on the target.

var _ terminal.Runtime = (*Client)(nil)

// releaseBound bounds each release Close makes; releasedWait is how long
// Close then waits for the released terminals' last events, before it
// ends the connection.
const (
	releaseBound = 15 * time.Second
	releasedWait = 2 * time.Second
)

// CreateTerminal runs a command on the target (terminal/create). The
// command is approved first (ClientOptions.Decide) as the target will run
// it: its cwd (the request's, else the session's, else the target's
// default) is filled in before the question is asked, and sent as
// approved. While a held subscription covers the session, the terminal's
// stream is lossless.
func (c *Client) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	resp, _, err := c.create(ctx, req, false)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// CreateTerminalHeld is CreateTerminal with a held subscription to the
// new terminal, as terminal.Manager's: it sees the terminal from its
// EventCreated and every byte of its output (the stream is lossless: the
// command waits for the subscriber, ClientOptions.Window bytes ahead at
// most), whether those events come before the create's answer or after.
// If the connection ends first, it gets the terminal's EventExited and
// EventReleased with Event.Lost saying why, then ErrDisconnected.
func (c *Client) CreateTerminalHeld(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, terminal.Events, error) {
	resp, sub, err := c.create(ctx, req, true)
	if err != nil {
		return nil, nil, err
	}
	return resp, sub, nil
}

func (c *Client) create(ctx context.Context, req *acp.CreateTerminalRequest, held bool) (*acp.CreateTerminalResponse, *Subscription, error) {
	sent, info, err := c.approve(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	tag := strconv.FormatUint(c.tags.Add(1), 36)
	var sub *Subscription
	if held {
		// Made before the create is sent: it binds to the terminal whose
		// start carries the tag, which may come before the answer.
		if sub, err = c.subscribe(req.SessionID, "", true, tag); err != nil {
			return nil, nil, err
		}
	}
	c.creating(req.SessionID, tag, &info)
	var window uint64
	if held || c.holds(req.SessionID) {
		window = c.window
	}
	var resp acp.CreateTerminalResponse
	err = c.call(ctx, MethodCreate, &CreateRequest{Terminal: *sent, Window: window, Tag: tag}, &resp)
	c.created(req.SessionID, tag, resp.TerminalID, err == nil)
	if err != nil {
		if sub != nil {
			sub.Close()
		}
		return nil, nil, err
	}
	if sub != nil && sub.bind(resp.TerminalID) {
		c.logf("the exec server started another terminal under the tag of the create it answered with %q; the held subscription follows %q",
			clip(string(resp.TerminalID), 64), clip(string(resp.TerminalID), 64))
		if err := c.resume(ctx, req.SessionID, resp.TerminalID, 0, window); err != nil {
			sub.Close()
			return nil, nil, err
		}
	}
	return &resp, sub, nil
}

// approve checks a create, fills in its cwd and asks Decide. It returns
// the request to send and the terminal as the user was asked about it.
func (c *Client) approve(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalRequest, terminal.Info, error) {
	if req == nil || req.SessionID == "" || req.Command == "" {
		return nil, terminal.Info{}, refused(acp.CodeInvalidParams, terminal.ErrInvalid, "invalid params: sessionId and command must not be empty")
	}
	c.mu.Lock()
	cwd, applied := c.cwds[req.SessionID], c.applied
	c.mu.Unlock()
	if cwd == "" {
		cwd = c.hello.DefaultCwd
	}
	if req.Cwd != nil && *req.Cwd != "" {
		cwd = *req.Cwd
	}
	if !path.IsAbs(cwd) {
		// Refused there too: refused before anyone is asked.
		return nil, terminal.Info{}, refused(acp.CodeInvalidParams, terminal.ErrInvalid, fmt.Sprintf("invalid params: cwd %q is not an absolute path", cwd))
	}
	sent := *req
	sent.Cwd = &cwd
	if _, asks := req.Meta[terminal.MetaPTY]; c.pty != nil && !asks {
		sent.Meta = maps.Clone(req.Meta)
		if sent.Meta == nil {
			sent.Meta = acp.Meta{}
		}
		sent.Meta[terminal.MetaPTY], _ = json.Marshal(Size(*c.pty))
	}
	info := terminal.Info{SessionID: req.SessionID, Command: req.Command, Args: slices.Clone(req.Args),
		Cwd: cwd, Shell: len(req.Args) == 0, Where: c.where, Sandbox: applied,
		PTY: terminal.RequestedPTY(sent.Meta), Stdin: terminal.RequestedStdin(sent.Meta)}
	if !info.Shell {
		info.Argv = append([]string{req.Command}, req.Args...)
	}
	for _, v := range req.Env {
		info.Env = append(info.Env, terminal.EnvVar{Name: v.Name, Value: v.Value})
	}
	if c.decide != nil {
		d := c.decide(ctx, info)
		if err := ctx.Err(); err != nil {
			return nil, terminal.Info{}, err
		}
		if !d.Allow {
			reason := d.Reason
			if reason == "" {
				reason = "denied by policy"
			}
			return nil, terminal.Info{}, refused(acp.CodePermissionDenied, terminal.ErrDenied, "permission denied: "+reason)
		}
	}
	return &sent, info, nil
}

// refused is a create refused here, before it is sent: with the code and
// the terminal kind the server would have answered with.
func refused(code int64, kind error, msg string) error {
	return &serverError{e: &acp.Error{Code: code, Message: msg}, kind: kind}
}

// TerminalOutput returns a terminal's output tail and, once it exited,
// its status (terminal/output).
func (c *Client) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	var resp acp.TerminalOutputResponse
	if err := c.call(ctx, methodOutput, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// WaitForTerminalExit waits for the command to exit
// (terminal/wait_for_exit). A cancelled ctx ends this wait only; a lost
// connection ends it with ErrDisconnected, saying what became of the
// command.
func (c *Client) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	var resp acp.WaitForTerminalExitResponse
	if err := c.call(ctx, methodWait, req, &resp); err != nil {
		return nil, c.lostErr(err)
	}
	return &resp, nil
}

// KillTerminal kills the command and keeps the terminal (terminal/kill).
func (c *Client) KillTerminal(ctx context.Context, req *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	var resp acp.KillTerminalResponse
	if err := c.call(ctx, methodKill, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// ReleaseTerminal kills what is left of the command and frees the
// terminal (terminal/release).
func (c *Client) ReleaseTerminal(ctx context.Context, req *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	if c.isKilled() {
		// The end of the connection kills and releases everything: a
		// release sent now would make the target wait out the kill grace.
		return nil, c.lostErr(ErrDisconnected)
	}
	var resp acp.ReleaseTerminalResponse
	if err := c.call(ctx, methodRelease, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// SetSessionCwd sets the target directory in which a session's terminals
// run when a create has none; "" forgets it.
func (c *Client) SetSessionCwd(ctx context.Context, sessionID acp.SessionID, dir string) error {
	if err := c.call(ctx, MethodSetSessionCwd, &SetSessionCwdRequest{SessionID: sessionID, Cwd: dir}, nil); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if dir == "" {
		delete(c.cwds, sessionID)
	} else {
		c.cwds[sessionID] = dir
	}
	return nil
}

// NewSessionOn sends session/new on conn and makes req.Cwd, a directory
// on the target, the session's cwd (terminal.NewSession).
func (c *Client) NewSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return terminal.NewSession(ctx, c, conn, req)
}

// LoadSessionOn is NewSessionOn for session/load.
func (c *Client) LoadSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	return terminal.LoadSession(ctx, c, conn, req)
}

// ResumeSessionOn is NewSessionOn for session/resume.
func (c *Client) ResumeSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.ResumeSessionRequest) (*acp.ResumeSessionResponse, error) {
	return terminal.ResumeSession(ctx, c, conn, req)
}

// ReleaseSession releases every terminal of a session on the target and
// forgets its cwd.
func (c *Client) ReleaseSession(ctx context.Context, sessionID acp.SessionID) error {
	c.mu.Lock()
	delete(c.cwds, sessionID)
	delete(c.sessions, sessionID)
	killed := c.killed
	c.mu.Unlock()
	if killed {
		return nil // the end of the connection released everything
	}
	return c.call(ctx, MethodReleaseSession, &ReleaseSessionRequest{SessionID: sessionID}, nil)
}

// Terminals lists the session's terminals that the target has started
// and not yet released, as their EventCreated described them (PID is the
// target's).
func (c *Client) Terminals(sessionID acp.SessionID) []terminal.Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ts []*ownedTerm
	for _, t := range c.terms {
		if t.info != nil && t.info.SessionID == sessionID {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b *ownedTerm) int { return cmp.Compare(a.n, b.n) })
	out := make([]terminal.Info, 0, len(ts))
	for _, t := range ts {
		out = append(out, *t.info)
	}
	return out
}

// KillAll SIGKILLs every command the server runs for this client, at
// once and without the kill grace (remote/kill_all); the terminals stay
// until released. When the server cannot be asked (a stalled transport,
// an exec server of an earlier release), it ends the connection instead,
// whose dead-man rule kills everything on the target at once, and
// returns the call's error.
func (c *Client) KillAll(ctx context.Context) error {
	err := c.call(ctx, MethodKillAll, struct{}{}, nil)
	if err == nil || errors.Is(err, ErrDisconnected) {
		return nil // a lost connection killed everything already
	}
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	_ = c.rw.Close()
	return fmt.Errorf("remote: kill_all: %w (the connection was ended instead: the target killed every command)", err)
}

func (c *Client) isKilled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killed
}

// lostErr says, of a call that failed because the connection ended, what
// that means for the command: it was killed there, and its exit status
// will never be known.
func (c *Client) lostErr(err error) error {
	if err == nil || !errors.Is(err, ErrDisconnected) {
		return err
	}
	c.mu.Lock()
	why := c.lostReasonLocked()
	c.mu.Unlock()
	return fmt.Errorf("%s: %w", why, err)
}

// lostReasonLocked is why a terminal still running when the connection
// ended will never be heard of again. c.mu is held.
func (c *Client) lostReasonLocked() string {
	where := c.where
	if where == "" {
		where = "the target"
	}
	switch {
	case c.killed:
		return fmt.Sprintf("killed: the connection to %s was ended, and the target killed the command at once", where)
	case c.closing:
		return fmt.Sprintf("the connection to %s was closed before the command's end was heard, and the target killed it", where)
	}
	return fmt.Sprintf("the connection to %s was lost and the target killed the command", where)
}

// releaseAll releases the sessions this client made terminals in, then
// waits a little for their last events: Close's first step, so that the
// subscriptions see the terminals end as they would locally.
func (c *Client) releaseAll() {
	c.mu.Lock()
	sids := make([]acp.SessionID, 0, len(c.sessions))
	for sid := range c.sessions {
		sids = append(sids, sid)
	}
	c.mu.Unlock()
	for _, sid := range sids {
		ctx, cancel := context.WithTimeout(context.Background(), releaseBound)
		if err := c.ReleaseSession(ctx, sid); err != nil && !errors.Is(err, ErrDisconnected) {
			c.logf("releasing the terminals of session %q: %v", clip(string(sid), 64), err)
		}
		cancel()
	}
	timer := time.NewTimer(releasedWait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := len(c.terms)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-c.done:
			return
		case <-timer.C:
			return
		}
	}
}

// Resume asks the server to replay a terminal's output from byte offset
// after, as far as it still retains it, and to stream on from there
// (remote/subscribe). Subscriptions see the replayed bytes that they had
// not received (by offset), counted in Event.Dropped no more.
//
// While a held subscription covers the session, the restarted stream
// is lossless.
func (c *Client) Resume(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, after uint64) error {
	var window uint64
	if c.holds(sessionID) {
		window = c.window
	}
	return c.resume(ctx, sessionID, terminalID, after, window)
}

func (c *Client) resume(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID, after, window uint64) error {
	req := &SubscribeRequest{SessionID: sessionID, TerminalID: terminalID, After: after, Window: window}
	if window > 0 {
		// Known before the call: the stream's output may come first.
		c.track(sessionID, terminalID, window, after)
	}
	return c.call(ctx, MethodSubscribe, req, nil)
}
