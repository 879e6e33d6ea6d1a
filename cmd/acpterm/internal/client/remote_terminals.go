package client

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// terminals is what runs the agent's commands: it serves terminal/* and
// gives the events the display shows. A terminal.Manager does it here
// (localTerminals), an exec server on the target with --remote
// (remoteTerminals).
type terminals interface {
	acp.TerminalHandler
	// SetSessionCwd is the directory of a session's terminals when a
	// create names none.
	SetSessionCwd(sessionID acp.SessionID, dir string) error
	// ReleaseSession releases every terminal of a session.
	ReleaseSession(sessionID acp.SessionID)
	// Terminals lists a session's live terminals. Their PIDs are of this
	// machine (0 for a terminal elsewhere), for a kill at once.
	Terminals(sessionID acp.SessionID) []terminal.Info
	// events subscribes to the events of every terminal, from now on.
	events() (eventStream, error)
	// killNow SIGKILLs the process groups of the session's terminals at
	// once, with no kill grace: the second interrupt. Their release
	// follows.
	killNow(sessionID acp.SessionID)
	// Close releases every terminal left and ends the runtime; once it
	// returns, the events end after those already queued.
	Close() error
}

// eventStream is a subscription to terminal events: a
// *terminal.Subscription, or the target's.
type eventStream interface {
	Next(ctx context.Context) (terminal.Event, error)
	Close()
}

// localTerminals are the terminals of this machine.
type localTerminals struct{ *terminal.Manager }

func (l localTerminals) events() (eventStream, error) {
	s, err := l.Subscribe("", "")
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (l localTerminals) killNow(sessionID acp.SessionID) {
	// A listed terminal is not released yet, so its leader is not reaped
	// and its PID still names its group.
	for _, t := range l.Terminals(sessionID) {
		killProcessGroup(t.PID)
	}
}

// remoteCallBound bounds the calls to the exec server that no request of
// the agent bounds: a session's cwd, the releases at the end. A release
// waits for the kill grace on the target.
const remoteCallBound = 15 * time.Second

// releasedWait is how long Close waits for the display to have the end
// of the terminals it released, before it ends the connection.
const releasedWait = 2 * time.Second

// remoteTerminals runs the agent's terminals on the target through its
// exec server. The user's approval (decide) is asked here, before the
// create is sent, about the command as the target will run it: its cwd is
// filled in first, so what is approved is what runs.
type remoteTerminals struct {
	r      *remoteRun
	c      *remote.Client
	decide func(context.Context, terminal.Info) terminal.Decision
	// confined is what the target confines the commands with, for their
	// display; nil when they are not.
	confined   *sandbox.Applied
	defaultCwd string
	warn       func(string)

	mu       sync.Mutex
	cwds     map[acp.SessionID]string
	sessions map[acp.SessionID]bool   // the sessions that made terminals
	live     map[string]terminal.Info // shown and not yet released, by session and terminal
	// pending are the requests of creates sent whose terminal the display
	// has not been told of yet: the target's events name what runs
	// (Argv), not what was asked (Command, Args), which the display shows.
	pending []pendingCreate
	// order is the keys of live in the order shown; exited those whose
	// exit the display was told of.
	order    []string
	exited   map[string]bool
	changed  chan struct{} // signalled when live shrinks
	closing  bool          // Close has begun: the end of the connection is no news
	killed   bool          // killNow ended the connection
	stopLost chan struct{} // ends watchLost
	lostDone chan struct{} // closed when watchLost has returned
	closer   sync.WaitGroup
}

var _ terminals = (*remoteTerminals)(nil)

func newRemoteTerminals(r *remoteRun, decide func(context.Context, terminal.Info) terminal.Decision, confined *sandbox.Applied, warn func(string)) *remoteTerminals {
	t := &remoteTerminals{r: r, c: r.client, decide: decide, confined: confined, warn: warn,
		defaultCwd: r.client.Hello().DefaultCwd,
		cwds:       map[acp.SessionID]string{}, sessions: map[acp.SessionID]bool{}, live: map[string]terminal.Info{},
		exited:  map[string]bool{},
		changed: make(chan struct{}, 1), stopLost: make(chan struct{}), lostDone: make(chan struct{})}
	if r.log != nil {
		r.log.set(warn)
	}
	go t.watchLost()
	return t
}

// watchLost tells the user once when the connection drops mid-run: every
// terminal call of the agent fails from then on, and the target has
// killed what ran there.
func (t *remoteTerminals) watchLost() {
	defer close(t.lostDone)
	select {
	case <-t.stopLost:
		return
	case <-t.c.Done():
	}
	t.mu.Lock()
	closing := t.closing
	t.mu.Unlock()
	if !closing {
		t.warn(fmt.Sprintf("acpterm: %s: %v; the commands there were killed", t.r.where, t.c.Err()))
	}
}

func termKey(sid acp.SessionID, tid acp.TerminalID) string { return string(sid) + "\x00" + string(tid) }

// CreateTerminal asks the user (decide), then runs the command on the
// target.
func (t *remoteTerminals) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	if req.SessionID == "" || req.Command == "" {
		return nil, fmt.Errorf("%w: sessionId and command must not be empty", acp.ErrInvalidParams)
	}
	t.mu.Lock()
	cwd := t.cwds[req.SessionID]
	t.mu.Unlock()
	if cwd == "" {
		cwd = t.defaultCwd
	}
	if req.Cwd != nil && *req.Cwd != "" {
		cwd = *req.Cwd
	}
	if !path.IsAbs(cwd) {
		// Refused there too: refused before the user is asked.
		return nil, fmt.Errorf("%w: cwd %q is not an absolute path", acp.ErrInvalidParams, cwd)
	}
	info := terminal.Info{SessionID: req.SessionID, Command: req.Command, Args: slices.Clone(req.Args),
		Cwd: cwd, Shell: len(req.Args) == 0, Where: t.r.host}
	if !info.Shell {
		info.Argv = append([]string{req.Command}, req.Args...)
	}
	for _, v := range req.Env {
		info.Env = append(info.Env, terminal.EnvVar{Name: v.Name, Value: v.Value})
	}
	if t.decide != nil {
		d := t.decide(ctx, info)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !d.Allow {
			reason := d.Reason
			if reason == "" {
				reason = "denied by policy"
			}
			return nil, &acp.Error{Code: acp.CodePermissionDenied, Message: "permission denied: " + reason}
		}
	}
	sent := *req
	sent.Cwd = &cwd
	p := pendingCreate{sid: req.SessionID, command: req.Command, args: info.Args}
	t.mu.Lock()
	t.pending = append(t.pending, p)
	t.mu.Unlock()
	resp, err := t.c.CreateTerminal(ctx, &sent)
	if err != nil {
		t.mu.Lock()
		t.takePending(req.SessionID, func(c *pendingCreate) bool { return c.command == p.command && slices.Equal(c.args, p.args) })
		t.mu.Unlock()
		return nil, err
	}
	t.mu.Lock()
	t.sessions[req.SessionID] = true
	t.mu.Unlock()
	return resp, nil
}

func (t *remoteTerminals) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	return t.c.TerminalOutput(ctx, req)
}

func (t *remoteTerminals) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	resp, err := t.c.WaitForTerminalExit(ctx, req)
	return resp, t.lostErr(err)
}

// lostErr says, of a call that failed because the connection ended, what
// that means for the agent's command: it was killed there, and its exit
// status will never be known.
func (t *remoteTerminals) lostErr(err error) error {
	if err == nil || !errors.Is(err, remote.ErrDisconnected) {
		return err
	}
	return fmt.Errorf("%s: %w", t.lostReason(), err)
}

// lostReason is why the display will never hear of the end of a terminal
// that still ran when the connection ended.
func (t *remoteTerminals) lostReason() string {
	t.mu.Lock()
	killed, closing := t.killed, t.closing
	t.mu.Unlock()
	switch {
	case killed:
		return fmt.Sprintf("killed: acpterm ended the connection to %s, and the target killed the command at once", t.r.host)
	case closing:
		return fmt.Sprintf("acpterm ended the connection to %s before the command's end was heard, and the target killed it", t.r.host)
	}
	return fmt.Sprintf("the connection to %s was lost and the target killed the command", t.r.host)
}

// killNow ends the connection: the exec server's dead-man rule SIGKILLs
// the process group of every command it runs at once, with no kill grace
// (the protocol has no signal verb, and terminal/kill waits out the grace
// on the target). The terminals still running then end on the display as
// killed. Close joins the closing.
func (t *remoteTerminals) killNow(acp.SessionID) {
	t.mu.Lock()
	first := !t.killed
	t.killed, t.closing = true, true
	t.mu.Unlock()
	if first {
		t.closer.Go(func() { _ = t.c.Close() })
	}
}

func (t *remoteTerminals) KillTerminal(ctx context.Context, req *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	return t.c.KillTerminal(ctx, req)
}

func (t *remoteTerminals) ReleaseTerminal(ctx context.Context, req *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	if t.isKilled() {
		return nil, t.lostErr(remote.ErrDisconnected)
	}
	return t.c.ReleaseTerminal(ctx, req)
}

// isKilled reports whether killNow has ended the connection. A release is
// then not sent: one that reached the target before the end of the
// connection would make it wait out the kill grace there (the server's
// dead-man rule SIGKILLs the commands that have not exited, not those it
// is releasing).
func (t *remoteTerminals) isKilled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.killed
}

// SetSessionCwd sets the session's cwd here, for the approval, and on the
// target.
func (t *remoteTerminals) SetSessionCwd(sessionID acp.SessionID, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), remoteCallBound)
	defer cancel()
	if err := t.c.SetSessionCwd(ctx, sessionID, dir); err != nil {
		return err
	}
	t.mu.Lock()
	t.cwds[sessionID] = dir
	t.mu.Unlock()
	return nil
}

func (t *remoteTerminals) ReleaseSession(sessionID acp.SessionID) {
	// After killNow the end of the connection releases everything
	// (isKilled).
	if !t.isKilled() {
		ctx, cancel := context.WithTimeout(context.Background(), remoteCallBound)
		defer cancel()
		if err := t.c.ReleaseSession(ctx, sessionID); err != nil && !errors.Is(err, remote.ErrDisconnected) {
			t.warn(fmt.Sprintf("acpterm: %s: releasing the session's terminals: %v", t.r.where, err))
		}
	}
	t.mu.Lock()
	delete(t.sessions, sessionID)
	t.mu.Unlock()
}

// Terminals lists the session's terminals that the display was told of
// and not yet of their release. The PIDs are the target's, so they are
// left out: nothing here may be killed by them.
func (t *remoteTerminals) Terminals(sessionID acp.SessionID) []terminal.Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []terminal.Info
	for _, info := range t.live {
		if info.SessionID == sessionID {
			info.PID = 0
			out = append(out, info)
		}
	}
	return out
}

func (t *remoteTerminals) events() (eventStream, error) {
	s, err := t.c.Subscribe("")
	if err != nil {
		return nil, err
	}
	return &remoteEvents{t: t, sub: s}, nil
}

// Close releases the sessions that made terminals, waits a little for the
// display to have their ends, and ends the connection: the exec server
// then kills whatever is left and exits.
func (t *remoteTerminals) Close() error {
	t.mu.Lock()
	t.closing = true
	var sids []acp.SessionID
	for sid := range t.sessions {
		sids = append(sids, sid)
	}
	t.mu.Unlock()
	for _, sid := range sids {
		t.ReleaseSession(sid)
	}
	t.waitReleased(releasedWait)
	err := t.c.Close()
	t.closer.Wait()
	close(t.stopLost)
	<-t.lostDone
	if errors.Is(err, remote.ErrDisconnected) {
		err = nil
	}
	return err
}

// waitReleased waits until the display has seen every terminal released,
// the connection ended, or within passed.
func (t *remoteTerminals) waitReleased(within time.Duration) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		t.mu.Lock()
		n := len(t.live)
		t.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-t.changed:
		case <-t.c.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// remoteEvents are the target's terminal events as the display takes
// them: the terminal's Info carries the target's sandbox, and the
// terminals shown are tracked until released (Terminals, Close).
type remoteEvents struct {
	t   *remoteTerminals
	sub *remote.Subscription
	// ends are the events that end the terminals the connection cut off,
	// given before err, the subscription's end.
	ends []terminal.Event
	err  error
}

func (e *remoteEvents) Next(ctx context.Context) (terminal.Event, error) {
	if e.err != nil {
		return e.nextEnd()
	}
	ev, err := e.sub.Next(ctx)
	if err != nil {
		if errors.Is(err, remote.ErrDisconnected) {
			e.ends = e.t.cutOff()
		}
		e.err = err
		return e.nextEnd()
	}
	t := e.t
	switch ev.Kind {
	case terminal.EventCreated:
		if ev.Info != nil {
			info := *ev.Info
			info.Sandbox, info.Where = t.confined, t.r.host
			t.mu.Lock()
			if c, ok := t.takePending(info.SessionID, func(c *pendingCreate) bool { return c.runs(info.Argv) }); ok {
				info.Command, info.Args, info.Shell = c.command, c.args, len(c.args) == 0
			} else if len(info.Argv) > 0 {
				info.Command, info.Args = info.Argv[0], info.Argv[1:]
			}
			key := termKey(ev.SessionID, ev.TerminalID)
			t.live[key] = info
			t.order = append(t.order, key)
			t.mu.Unlock()
			ev.Info = &info
		}
	case terminal.EventExited:
		t.mu.Lock()
		t.exited[termKey(ev.SessionID, ev.TerminalID)] = true
		t.mu.Unlock()
	case terminal.EventReleased:
		key := termKey(ev.SessionID, ev.TerminalID)
		t.mu.Lock()
		delete(t.live, key)
		delete(t.exited, key)
		t.order = slices.DeleteFunc(t.order, func(k string) bool { return k == key })
		t.mu.Unlock()
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	return ev, nil
}

// nextEnd gives the next of the ends, then the subscription's error.
func (e *remoteEvents) nextEnd() (terminal.Event, error) {
	if len(e.ends) == 0 {
		return terminal.Event{}, e.err
	}
	ev := e.ends[0]
	e.ends = e.ends[1:]
	return ev, nil
}

// cutOff is what ends, on the display, the terminals shown and not
// released when the connection ended: an exit for those whose exit was
// not heard, with the reason in place of a status, and a release for
// each. They are forgotten, as released.
func (t *remoteTerminals) cutOff() []terminal.Event {
	why := t.lostReason()
	t.mu.Lock()
	defer t.mu.Unlock()
	var evs []terminal.Event
	for _, key := range t.order {
		if _, ok := t.live[key]; !ok {
			continue
		}
		sid, tid, _ := strings.Cut(key, "\x00")
		ev := terminal.Event{SessionID: acp.SessionID(sid), TerminalID: acp.TerminalID(tid), Lost: why}
		if !t.exited[key] {
			ev.Kind = terminal.EventExited
			evs = append(evs, ev)
		}
		ev.Kind = terminal.EventReleased
		evs = append(evs, ev)
	}
	t.live, t.exited, t.order = map[string]terminal.Info{}, map[string]bool{}, nil
	select {
	case t.changed <- struct{}{}:
	default:
	}
	return evs
}

// Close ends the subscription; nobody is then left to see releases, for
// which Close of the terminals need not wait.
func (e *remoteEvents) Close() {
	e.sub.Close()
	t := e.t
	t.mu.Lock()
	t.live, t.exited, t.order = map[string]terminal.Info{}, map[string]bool{}, nil
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// pendingCreate is a create's request, until its terminal is shown.
type pendingCreate struct {
	sid     acp.SessionID
	command string
	args    []string
}

// runs reports whether argv is what the target runs for the request: the
// shell with the line last, or the command (its path resolved there) with
// the args.
func (c *pendingCreate) runs(argv []string) bool {
	if len(c.args) == 0 {
		return len(argv) > 1 && argv[len(argv)-1] == c.command
	}
	return len(argv) == len(c.args)+1 && slices.Equal(argv[1:], c.args) &&
		(argv[0] == c.command || path.Base(argv[0]) == path.Base(c.command))
}

// takePending removes and returns the oldest pending create of the
// session that match accepts. t.mu is held.
func (t *remoteTerminals) takePending(sid acp.SessionID, match func(*pendingCreate) bool) (pendingCreate, bool) {
	for i := range t.pending {
		if c := &t.pending[i]; c.sid == sid && match(c) {
			found := *c
			t.pending = slices.Delete(t.pending, i, i+1)
			return found, true
		}
	}
	return pendingCreate{}, false
}
