package terminal

import "github.com/acpterm/acpterm/acp"

// retainedSnap is the final state of a released terminal, kept for
// Snapshot.
type retainedSnap struct {
	snap Snapshot
	size int64
}

// retainLocked keeps a released terminal's final state within RetainBytes,
// dropping the oldest; the newest is always kept.
func (m *Manager) retainLocked(key string, snap Snapshot) {
	if m.cfg.retain < 0 {
		return
	}
	size := snapshotSize(&snap)
	m.retained[key] = &retainedSnap{snap: snap, size: size}
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

// snapshotSize approximates the memory a retained snapshot holds: its
// text and every string of its request, which the agent chose (an
// argument list can take megabytes), each with its header. Strings that
// Argv shares with Args count twice; erring high only retains less.
func snapshotSize(snap *Snapshot) int64 {
	const header = 16
	n := 256 + len(snap.Text) + len(snap.Command) + len(snap.SessionID) + len(snap.TerminalID) + len(snap.Cwd)
	for _, list := range [][]string{snap.Args, snap.Argv} {
		for _, a := range list {
			n += header + len(a)
		}
	}
	for _, v := range snap.Env {
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
	r := m.retained[key]
	m.mu.Unlock()
	if r != nil {
		return r.snap, nil
	}
	if t == nil {
		return Snapshot{}, notFound(terminalID)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.final != nil {
		return *t.final, nil
	}
	return Snapshot{Info: t.info, Output: t.outputLocked()}, nil
}
