package terminal

import (
	"context"

	"github.com/acpterm/acpterm/acp"
)

// Runtime runs an agent's terminals: a *Manager on this machine, a
// *remote.Client on another one (over ssh, in a container or a pod). A
// client written against Runtime runs its commands either way, with the
// same calls and the same events.
//
// It serves ACP's five terminal methods (acp.TerminalHandler, so a client
// that embeds a Runtime advertises clientCapabilities.terminal and
// nothing else), and the host's own needs around them: a terminal's
// events (Subscribe, CreateTerminalHeld), the session's cwd, the end of
// a session, an emergency stop and the end of the runtime.
type Runtime interface {
	acp.TerminalHandler

	// CreateTerminalHeld is CreateTerminal with a held subscription to
	// the new terminal: it sees the terminal from its EventCreated and
	// every byte of its output (the command waits for the subscriber
	// rather than drop any), and ends after the terminal's
	// EventReleased. Its output is complete once EventExited has come,
	// whenever that happens (before CreateTerminalHeld returns, too).
	// When the runtime ends first (Close, a remote connection lost), the
	// subscription still gets an EventExited and an EventReleased, with
	// Event.Lost saying why, then its error.
	CreateTerminalHeld(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, Events, error)

	// Subscribe returns a subscription to terminal events:
	//   - Subscribe("", "") covers every terminal of every session;
	//   - Subscribe(sid, "") the terminals of one session;
	//   - Subscribe(sid, tid) one live terminal, starting with a replay
	//     of what it did so far; it ends after its EventReleased.
	// The first two see events from the moment they subscribe.
	Subscribe(sessionID acp.SessionID, terminalID acp.TerminalID) (Events, error)

	// SetSessionCwd sets the directory in which the session's terminals
	// run when a create has no cwd; "" forgets it.
	SetSessionCwd(ctx context.Context, sessionID acp.SessionID, dir string) error
	// NewSessionOn, LoadSessionOn and ResumeSessionOn send the request on
	// conn and make its cwd the session's (SetSessionCwd).
	NewSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error)
	LoadSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error)
	ResumeSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.ResumeSessionRequest) (*acp.ResumeSessionResponse, error)
	// ReleaseSession releases every terminal of the session and forgets
	// its cwd. Call it when the session ends.
	ReleaseSession(ctx context.Context, sessionID acp.SessionID) error
	// Terminals lists the live terminals of a session.
	Terminals(sessionID acp.SessionID) []Info

	// KillAll SIGKILLs every command at once, without the kill grace;
	// the terminals stay until released. It is for a host that must end
	// everything now (the user pressed Ctrl-C twice).
	KillAll(ctx context.Context) error
	// Close releases every terminal left, ends the subscriptions after
	// the events already queued, and ends the runtime. Idempotent.
	Close() error
}

// Events is a subscription to terminal events: a *Subscription here, or
// a remote client's.
type Events interface {
	// Next returns the next event, waiting until ctx is done. After the
	// subscription ends it returns the events still queued, then its
	// error (ErrSubscriptionClosed after Close).
	Next(ctx context.Context) (Event, error)
	// Close ends the subscription; queued events are discarded.
	Close()
}

var (
	_ Runtime = (*Manager)(nil)
	_ Events  = (*Subscription)(nil)
)

// NewSession sends session/new on conn and, once the agent has named the
// session, makes req.Cwd its cwd on rt (SetSessionCwd). The cwd is
// checked before anything is sent: a relative one fails with ErrInvalid
// and no session is created. It is what Runtime.NewSessionOn does.
func NewSession(ctx context.Context, rt Runtime, conn *acp.ClientConn, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return openSession(ctx, rt, req, conn.NewSession, func(r *acp.NewSessionRequest) string { return r.Cwd },
		func(_ *acp.NewSessionRequest, resp *acp.NewSessionResponse) acp.SessionID {
			if resp == nil {
				return ""
			}
			return resp.SessionID
		})
}

// LoadSession sends session/load on conn and, when the agent loaded the
// session, makes req.Cwd its cwd on rt, as NewSession does.
func LoadSession(ctx context.Context, rt Runtime, conn *acp.ClientConn, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	return openSession(ctx, rt, req, conn.LoadSession, func(r *acp.LoadSessionRequest) string { return r.Cwd },
		func(r *acp.LoadSessionRequest, _ *acp.LoadSessionResponse) acp.SessionID { return r.SessionID })
}

// ResumeSession sends session/resume on conn and, when the agent resumed
// the session, makes req.Cwd its cwd on rt, as NewSession does.
func ResumeSession(ctx context.Context, rt Runtime, conn *acp.ClientConn, req *acp.ResumeSessionRequest) (*acp.ResumeSessionResponse, error) {
	return openSession(ctx, rt, req, conn.ResumeSession, func(r *acp.ResumeSessionRequest) string { return r.Cwd },
		func(r *acp.ResumeSessionRequest, _ *acp.ResumeSessionResponse) acp.SessionID { return r.SessionID })
}

// openSession checks req's cwd, sends req, and gives the session it
// opened (sid, "" for none) that cwd on rt.
func openSession[Req, Resp any](ctx context.Context, rt Runtime, req *Req, send func(context.Context, *Req) (*Resp, error),
	cwd func(*Req) string, sid func(*Req, *Resp) acp.SessionID) (*Resp, error) {
	if err := checkSessionCwd(req, cwd); err != nil {
		return nil, err
	}
	resp, err := send(ctx, req)
	if err != nil || req == nil {
		return resp, err
	}
	id := sid(req, resp)
	if id == "" {
		return resp, nil
	}
	return resp, rt.SetSessionCwd(ctx, id, cwd(req))
}
