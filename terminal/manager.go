package terminal

import (
	"context"
	"fmt"
	"github.com/acpterm/acpterm/acp"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/acpterm/acpterm/internal/text/randhex"
)

// Manager runs terminals for ACP sessions. It is safe for concurrent use;
// every method may be called from any goroutine, and a long Wait never
// blocks the others.
type Manager struct {
	cfg   config
	iso   *isolator
	nonce string // makes markers unique to this manager

	// mu guards the fields below. It may be taken while holding a
	// terminal's mutex, never the other way round.
	mu        sync.Mutex
	sessions  map[acp.SessionID]*session
	releasing map[string]*term // removed from their session, not yet retained
	closed    bool
	creating  int        // creates between reserve and registration
	live      int        // terminals reserved and not yet released, of all sessions
	idle      *sync.Cond // on mu: creating or releasing went down
	retained  map[string]*retainedSnap
	retOrder  []string // keys of retained, oldest first
	retBytes  int64

	subMu sync.Mutex // serializes changes to subs
	subs  atomic.Pointer[[]*Subscription]

	waiting func() // test hook: a Wait is about to block
	found   func() // test hook: lookup found a terminal and let go of mu

	closeOnce sync.Once
}

type session struct {
	cwd   string
	terms map[acp.TerminalID]*term
	live  int // terminals created and not released, plus creates in progress
	// epoch counts the ReleaseSession calls that found the session: a
	// create reserved in an earlier epoch is not registered in a later one.
	epoch uint64
}

// NewManager returns a Manager configured by opts (nil means defaults).
// With IsolationAuto it creates a cgroup when it can; call Close to kill
// every terminal and remove it.
func NewManager(opts *Options) *Manager {
	cfg := newConfig(opts)
	m := &Manager{
		cfg:       cfg,
		iso:       newIsolator(&cfg),
		nonce:     randhex.String(4),
		sessions:  map[acp.SessionID]*session{},
		releasing: map[string]*term{},
		retained:  map[string]*retainedSnap{},
	}
	m.idle = sync.NewCond(&m.mu)
	return m
}

// Isolation reports the no-orphans mechanism in use for new terminals.
func (m *Manager) Isolation() Isolation { return m.iso.mode() }

// SetSessionCwd sets the directory in which the session's terminals run
// when a create has no cwd. dir must be absolute; "" forgets it.
// It does no I/O; ctx is there for Runtime, whose remote side does.
func (m *Manager) SetSessionCwd(_ context.Context, sessionID acp.SessionID, dir string) error {
	if dir != "" && !filepath.IsAbs(dir) {
		return invalidf("session cwd %q is not an absolute path", dir)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if dir == "" {
		if s := m.sessions[sessionID]; s != nil {
			s.cwd = ""
			m.gcSessionLocked(sessionID, s)
		}
		return nil
	}
	m.sessionLocked(sessionID).cwd = filepath.Clean(dir)
	return nil
}

func (m *Manager) sessionLocked(id acp.SessionID) *session {
	s := m.sessions[id]
	if s == nil {
		s = &session{terms: map[acp.TerminalID]*term{}}
		m.sessions[id] = s
	}
	return s
}

func (m *Manager) gcSessionLocked(id acp.SessionID, s *session) {
	if s.cwd == "" && s.live == 0 && len(s.terms) == 0 {
		delete(m.sessions, id)
	}
}

// lookup finds a live terminal. Unknown, released and other sessions'
// terminals get the same error.
func (m *Manager) lookup(sessionID acp.SessionID, terminalID acp.TerminalID) (*term, error) {
	m.mu.Lock()
	var t *term
	if s := m.sessions[sessionID]; s != nil {
		t = s.terms[terminalID]
	}
	m.mu.Unlock()
	if t == nil {
		return nil, notFound(terminalID)
	}
	if m.found != nil {
		m.found()
	}
	return t, nil
}

// Output returns the terminal's output so far and, once it has exited, its
// exit status (terminal/output).
func (m *Manager) Output(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID) (Output, error) {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return Output{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released {
		// A Release finished between the lookup and here: the buffer is
		// emptied, and the terminal is gone as for any later call.
		return Output{}, notFound(terminalID)
	}
	return t.outputLocked(), nil
}

// Wait waits for the command's process to exit (terminal/wait_for_exit).
// Any number of callers may wait; a cancelled ctx ends this wait only, with
// ctx.Err(), and leaves the command running. Release resolves pending
// waits with the final status.
func (m *Manager) Wait(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID) (ExitStatus, error) {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return ExitStatus{}, err
	}
	if m.waiting != nil {
		m.waiting()
	}
	select {
	case <-t.done:
		return *t.status, nil
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

// Kill stops the command (terminal/kill): SIGTERM to its process group
// (and cgroup), KillGrace, then SIGKILL to all of it. It returns when the
// command has exited, or with ctx.Err() when ctx ends first (the kill goes
// on). The terminal stays valid for Output and Wait. Killing a command
// that has exited does nothing.
func (m *Manager) Kill(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID) error {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return err
	}
	t.startKill(false)
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release kills the command if it still runs, waits for it, kills what is
// left of its descendants and frees the terminal (terminal/release). The
// ID is invalid for every method afterwards; Snapshot still has the final
// output for a while. The teardown is bounded (KillGrace plus a little) and
// finishes even if ctx ends.
func (m *Manager) Release(ctx context.Context, sessionID acp.SessionID, terminalID acp.TerminalID) error {
	m.mu.Lock()
	var t *term
	if s := m.sessions[sessionID]; s != nil {
		if t = s.terms[terminalID]; t != nil {
			delete(s.terms, terminalID)
			m.releasing[t.key] = t
		}
	}
	m.mu.Unlock()
	if t == nil {
		return notFound(terminalID)
	}
	m.teardown([]*term{t}, true)
	return nil
}

// ReleaseSession releases every terminal of the session, concurrently,
// forgets its cwd and stops the session's sandbox helper. Call it when the
// session ends. It returns nil once they are released (the teardown is
// bounded as Release's and finishes even if ctx ends).
func (m *Manager) ReleaseSession(_ context.Context, sessionID acp.SessionID) error {
	m.mu.Lock()
	var ts []*term
	if s := m.sessions[sessionID]; s != nil {
		for id, t := range s.terms {
			ts = append(ts, t)
			delete(s.terms, id)
			m.releasing[t.key] = t
		}
		s.cwd = ""
		s.epoch++
		m.gcSessionLocked(sessionID, s)
	}
	m.mu.Unlock()
	m.teardown(ts, true)
	m.iso.releaseSession(string(sessionID))
	return nil
}

// releasedMeanwhile stops the sandbox helpers that a create started for
// its session after ReleaseSession had stopped the session's, unless the
// session is in use again.
func (m *Manager) releasedMeanwhile(sessionID acp.SessionID) {
	m.mu.Lock()
	unused := m.sessions[sessionID] == nil
	m.mu.Unlock()
	if unused {
		m.iso.releaseSession(string(sessionID))
	}
}

// Close releases every terminal of every session, ends all subscriptions
// (after the events already queued) and removes the manager's cgroup.
// Creates after Close fail with ErrClosed. Close is idempotent; calls after
// the first wait for it to finish.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		var ts []*term
		for _, s := range m.sessions {
			for id, t := range s.terms {
				ts = append(ts, t)
				delete(s.terms, id)
				m.releasing[t.key] = t
			}
		}
		m.mu.Unlock()
		m.teardown(ts, true)
		// Wait for releases and creates that were under way, so that
		// nothing uses the cgroup once it is gone.
		m.mu.Lock()
		for m.creating > 0 || len(m.releasing) > 0 {
			m.idle.Wait()
		}
		m.mu.Unlock()
		m.subMu.Lock()
		subs := m.wideSubs()
		m.subs.Store(nil)
		m.subMu.Unlock()
		for _, s := range subs {
			s.end()
		}
		m.iso.close()
	})
	return nil
}

// KillAll SIGKILLs every command the manager runs, at once and without the
// kill grace: the commands of every session, and those whose release is
// under way and still waiting out their grace period. Their process groups
// (and cgroups) go too. It is for a host that must end everything now: its
// connection to the client is lost, or the user asked twice. The terminals
// stay; Release, ReleaseSession or Close then frees them, and finds the
// commands already gone. It does no I/O and returns nil; ctx is there
// for Runtime, whose remote side does.
func (m *Manager) KillAll(context.Context) error {
	m.mu.Lock()
	var ts []*term
	for _, s := range m.sessions {
		for _, t := range s.terms {
			ts = append(ts, t)
		}
	}
	for _, t := range m.releasing {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	for _, t := range ts {
		t.mu.Lock()
		// Until finish marks it, the command's process is not reaped, so
		// its process group ID cannot name another's.
		if !t.reaped {
			t.proc.kill()
		}
		t.mu.Unlock()
	}
	return nil
}

// teardown kills, sweeps and frees terminals already removed from their
// session. The kills run concurrently, so n terminals take one grace
// period, not n.
func (m *Manager) teardown(ts []*term, registered bool) {
	if len(ts) == 0 {
		return
	}
	for _, t := range ts {
		t.startKill(false)
	}
	procs := make([]*proc, len(ts))
	for i, t := range ts {
		<-t.done
		procs[i] = t.proc
	}
	m.iso.sweep(procs)
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.finish(t, registered)
		}()
	}
	wg.Wait()
}

// finish joins the terminal's goroutines, frees its OS resources, keeps
// its final state for Snapshot and announces the release.
func (m *Manager) finish(t *term, registered bool) {
	if t.timer != nil {
		t.timer.Stop()
	}
	// The reader has stopped (done implies it) except on Windows, where
	// closing is what ends a read that a descendant keeps open.
	_ = t.pr.Close()
	t.in.close()
	t.wg.Wait()
	t.mu.Lock()
	t.reaped = true
	t.mu.Unlock()
	t.proc.release(m.cfg.logf)
	m.removeTemp(t.tmp)
	// A command wrapped on its own holds the placeholders of the
	// protected paths that do not exist (see sandbox.Policy.Protected).
	if err := t.info.Sandbox.Cleanup(); err != nil {
		m.cfg.logf("terminal: %v", err)
	}

	t.mu.Lock()
	t.released = true
	if registered {
		st := *t.status
		t.publishLocked(Event{Kind: EventReleased, Status: &st, TimedOut: t.timedOut})
	}
	t.subs = nil
	if m.cfg.retain < 0 {
		t.out = newTail(0) // nothing is retained: free the buffer
		t.pty.free()
	}
	t.mu.Unlock()

	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.releasing, t.key)
	m.idle.Broadcast()
	m.retainLocked(t.key, t)
	if registered {
		m.live--
		if s := m.sessions[t.info.SessionID]; s != nil {
			s.live--
			m.gcSessionLocked(t.info.SessionID, s)
		}
	}
}

// Terminals lists the live terminals of a session.
func (m *Manager) Terminals(sessionID acp.SessionID) []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Info
	if s := m.sessions[sessionID]; s != nil {
		for _, t := range s.terms {
			out = append(out, t.info)
		}
	}
	return out
}

// String describes the manager for logs.
func (m *Manager) String() string {
	return fmt.Sprintf("terminal.Manager(isolation=%s)", m.Isolation())
}
