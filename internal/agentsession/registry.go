// Package agentsession keeps the sessions of acpterm's built-in agents (the
// shell agent and the probe): each session has an absolute cwd and at most
// one running prompt, which session/cancel stops.
package agentsession

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/randhex"
)

// Registry is the set of sessions of one connection. The zero value is
// ready to use.
type Registry struct {
	mu sync.Mutex
	m  map[acp.SessionID]*session
}

type session struct {
	cwd    string
	cancel context.CancelFunc // of the running prompt, nil when idle
}

// New opens a session in cwd, which must be absolute, and returns its id.
func (r *Registry) New(cwd string) (acp.SessionID, error) {
	if !isAbs(cwd) {
		return "", fmt.Errorf("%w: cwd %q is not an absolute path", acp.ErrInvalidParams, cwd)
	}
	id := acp.SessionID("sess_" + randhex.String(8))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[acp.SessionID]*session{}
	}
	r.m[id] = &session{cwd: cwd}
	return id, nil
}

// Begin claims session id for a prompt. It returns a context that Cancel
// (or end) cancels, the session's cwd, and end, which the caller must call
// when the prompt is answered. A session that is unknown, or already
// running a prompt (what names it in the error), is an invalid-params error.
func (r *Registry) Begin(ctx context.Context, id acp.SessionID, what string) (_ context.Context, cwd string, end func(), _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.m[id]
	switch {
	case !ok:
		return nil, "", nil, fmt.Errorf("%w: unknown session %q", acp.ErrInvalidParams, id)
	case s.cancel != nil:
		return nil, "", nil, fmt.Errorf("%w: session %q is already running %s", acp.ErrInvalidParams, id, what)
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	return ctx, s.cwd, func() {
		cancel()
		r.mu.Lock()
		s.cancel = nil
		r.mu.Unlock()
	}, nil
}

// Cancel stops the session's running prompt, if any.
func (r *Registry) Cancel(id acp.SessionID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.m[id]; ok && s.cancel != nil {
		s.cancel()
	}
}

// isAbs accepts Unix paths and Windows drive paths, whichever OS the agent
// runs on: the cwd is the client's.
func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}
