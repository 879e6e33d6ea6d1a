package terminal

import (
	"context"
	"path/filepath"

	"github.com/acpterm/acpterm/acp"
)

// NewSessionOn sends session/new on conn and, once the agent has named the
// session, makes req.Cwd the session's cwd (SetSessionCwd), so that the
// session's terminals run there when a create gives no cwd. The cwd is
// checked before anything is sent: a relative one fails with ErrInvalid
// and no session is created. A host that opens sessions this way never
// calls SetSessionCwd itself. It is NewSession(ctx, m, conn, req).
func (m *Manager) NewSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return NewSession(ctx, m, conn, req)
}

// LoadSessionOn sends session/load on conn and, when the agent loaded the
// session, makes req.Cwd its cwd, as NewSessionOn does.
func (m *Manager) LoadSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.LoadSessionRequest) (*acp.LoadSessionResponse, error) {
	return LoadSession(ctx, m, conn, req)
}

// ResumeSessionOn sends session/resume on conn and, when the agent resumed
// the session, makes req.Cwd its cwd, as NewSessionOn does.
func (m *Manager) ResumeSessionOn(ctx context.Context, conn *acp.ClientConn, req *acp.ResumeSessionRequest) (*acp.ResumeSessionResponse, error) {
	return ResumeSession(ctx, m, conn, req)
}

// checkSessionCwd fails a request whose cwd SetSessionCwd would refuse,
// before it reaches the agent, so that a session is never opened that the
// manager cannot serve as asked.
func checkSessionCwd[R any](req *R, cwd func(*R) string) error {
	if req == nil {
		return nil
	}
	if dir := cwd(req); dir != "" && !filepath.IsAbs(dir) {
		return invalidf("session cwd %q is not an absolute path", dir)
	}
	return nil
}
