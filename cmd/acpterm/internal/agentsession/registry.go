// Package agentsession keeps the sessions of acpterm's built-in agents (the
// shell agent and the probe): each session has an absolute cwd and at most
// one running prompt. Stopping that prompt on session/cancel is not its
// job: acp.AgentConn cancels the ctx of the session's running Prompt
// itself.
package agentsession

import (
	"fmt"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/randhex"
)

// MaxSessions bounds the sessions a Registry keeps. The agents implement
// no session/close, so without a bound a client sending session/new in a
// loop would grow the registry for as long as the connection lasts. Past
// the bound, New forgets the least recently used idle session: a registry
// serves one connection, so the only client that can lose a session is
// the one that opened more than MaxSessions, and a prompt on a forgotten
// session is the clear "unknown session" error. A session running a prompt
// is never forgotten; when all of them are, New refuses.
const MaxSessions = 1024

// MaxCwdLen bounds the cwd of a session in bytes, since a session keeps it:
// together with MaxSessions it bounds the registry's memory (4 MiB). It is
// Linux's PATH_MAX, longer than chdir accepts there, and far above the
// 260 of a Windows drive path (the only Windows kind isAbs accepts) where
// long paths are not enabled.
const MaxCwdLen = 4096

// Registry is the set of sessions of one connection. The zero value is
// ready to use.
type Registry struct {
	mu   sync.Mutex
	m    map[acp.SessionID]*session
	tick uint64 // counts New and Begin calls, for session.used
}

type session struct {
	cwd     string
	running bool   // a prompt holds the session
	used    uint64 // Registry.tick when last opened or prompted
}

// New opens a session in cwd, which must be absolute and at most MaxCwdLen
// bytes long, and returns its id. With MaxSessions sessions open it first
// forgets the least recently used idle one, or, if every session is
// running a prompt, refuses.
func (r *Registry) New(cwd string) (acp.SessionID, error) {
	switch {
	case len(cwd) > MaxCwdLen:
		return "", fmt.Errorf("%w: cwd of %d bytes is longer than %d", acp.ErrInvalidParams, len(cwd), MaxCwdLen)
	case !isAbs(cwd):
		return "", fmt.Errorf("%w: cwd %q is not an absolute path", acp.ErrInvalidParams, cwd)
	}
	id := acp.SessionID("sess_" + randhex.String(8))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[acp.SessionID]*session{}
	}
	if len(r.m) >= MaxSessions && !r.evictLocked() {
		return "", fmt.Errorf("%w: %d sessions are open and all are running a prompt", acp.ErrInternal, len(r.m))
	}
	r.tick++
	r.m[id] = &session{cwd: cwd, used: r.tick}
	return id, nil
}

// evictLocked forgets the least recently used idle session, and reports
// whether there was one. It scans: at most MaxSessions entries, and only
// once the registry is full.
func (r *Registry) evictLocked() bool {
	var oldest acp.SessionID
	var found *session
	for id, s := range r.m {
		if !s.running && (found == nil || s.used < found.used) {
			oldest, found = id, s
		}
	}
	if found == nil {
		return false
	}
	delete(r.m, oldest)
	return true
}

// Begin claims session id for a prompt. It returns the session's cwd and
// end, which the caller must call when the prompt is answered. A session
// that is unknown, or already running a prompt (what names it in the
// error), is an invalid-params error. Stopping the prompt is not the
// registry's job: acp.AgentConn cancels a Prompt's ctx on session/cancel,
// so an agent needs neither cancel funcs nor a Cancel method.
func (r *Registry) Begin(id acp.SessionID, what string) (cwd string, end func(), _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.m[id]
	switch {
	case !ok:
		return "", nil, fmt.Errorf("%w: unknown session %q", acp.ErrInvalidParams, id)
	case s.running:
		return "", nil, fmt.Errorf("%w: session %q is already running %s", acp.ErrInvalidParams, id, what)
	}
	s.running = true
	r.tick++
	s.used = r.tick
	return s.cwd, func() {
		r.mu.Lock()
		s.running = false
		r.mu.Unlock()
	}, nil
}

// isAbs accepts Unix paths and Windows drive paths, whichever OS the agent
// runs on: the cwd is the client's.
func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}
