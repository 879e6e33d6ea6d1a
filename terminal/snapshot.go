package terminal

import "github.com/acpterm/acpterm/acp"

// retainedSnap is a released terminal kept for Snapshot. Its final
// output is rendered when Snapshot asks for it (outputLocked caches it),
// not at release: most are never asked for, and rendering a full tail
// copies it twice (16 MiB each at the default limit), a seventh of the
// CPU of streaming 200 MiB.
type retainedSnap struct {
	t    *term
	size int64
}

// retainLocked keeps a released terminal's final state within RetainBytes,
// dropping the oldest; the newest is always kept.
func (m *Manager) retainLocked(key string, t *term) {
	if m.cfg.retain < 0 {
		return
	}
	t.mu.Lock()
	size := snapshotSize(t)
	t.mu.Unlock()
	m.retained[key] = &retainedSnap{t: t, size: size}
	m.retOrder = append(m.retOrder, key)
	m.retBytes += size
	for len(m.retOrder) > 1 && m.retBytes > m.cfg.retain {
		old := m.retOrder[0]
		m.retOrder = m.retOrder[1:]
		if r := m.retained[old]; r != nil {
			m.retBytes -= r.size
			delete(m.retained, old)
		}
	}
}

// snapshotSize approximates the memory a retained terminal holds: its
// output (the tail, and its text once rendered) and every string of its
// request, which the agent chose (an argument list can take megabytes),
// each with its header. Strings that Argv shares with Args count twice;
// erring high only retains less. t.mu is held.
func snapshotSize(t *term) int64 {
	const header = 16
	info := &t.info
	n := 256 + t.out.Len() + len(t.cache) + len(info.Command) + len(info.SessionID) + len(info.TerminalID) + len(info.Cwd)
	for _, list := range [][]string{info.Args, info.Argv} {
		for _, a := range list {
			n += header + len(a)
		}
	}
	for _, v := range info.Env {
		n += 2*header + len(v.Name) + len(v.Value)
	}
	return int64(n)
}

// Snapshot returns a terminal's current state, or its final state if it
// was released recently (within Options.RetainBytes). It is for the host's
// UI; the protocol methods forget a terminal at release.
func (m *Manager) Snapshot(sessionID acp.SessionID, terminalID acp.TerminalID) (Snapshot, error) {
	key := termKey(sessionID, terminalID)
	m.mu.Lock()
	var t *term
	if s := m.sessions[sessionID]; s != nil {
		t = s.terms[terminalID]
	}
	if t == nil {
		t = m.releasing[key]
	}
	if r := m.retained[key]; r != nil {
		t = r.t
	}
	m.mu.Unlock()
	if t == nil {
		return Snapshot{}, notFound(terminalID)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return Snapshot{Info: t.info, Output: t.outputLocked(), Released: t.released}, nil
}
