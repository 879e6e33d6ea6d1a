package terminal

import (
	"context"

	"github.com/acpterm/acpterm/acp"
)

// Held subscriptions are for a host that must see every byte a command
// writes (a remote stream that promised not to drop, a capture to a
// file): instead of dropping output that does not fit in its buffer
// (Options.SubscriberBuffer), a held subscription makes the terminal's
// reader wait until the subscriber has taken an event. The pipe then
// fills and the command blocks in write(2), as it would writing to a
// slow reader of its own pipe. Memory stays bounded by the buffer.
//
// The hold is on the command only while its process runs: it never holds
// up the rest of the terminal. Output, Wait, Kill and Release answer as
// usual (the reader waits without the terminal's lock), a kill or release
// ends a held command as any other (blocked in write, it dies of SIGTERM
// or, after KillGrace, SIGKILL), and once the process has exited the
// reader drains the pipe without waiting: what it reads then may go
// beyond the buffer by heldDrain (what the pipe held at the exit, and the
// chunk the reader had in hand), and only what a lingering descendant
// writes beyond that is dropped and counted, as for any subscription. So
// the exit status is never delayed by a slow subscriber, and a
// subscriber that stops reading stalls its own terminal's command,
// nothing else. Close the subscription to let the command run on.

// heldDrain is what a held subscription queues beyond its buffer once
// the command's process has exited: the most a pipe holds on Linux for a
// command that enlarged it without privilege (/proc/sys/fs/pipe-max-size,
// 1 MiB by default; 64 KiB unless it asked), and one read.
const heldDrain = 1<<20 + maxReadBuf

// CreateHeld is Create, and returns a held subscription to the new
// terminal, made before the command's output is first read: it sees the
// terminal from its Created event and every byte of its output, whatever
// the request's OutputByteLimit (which bounds the tail, as always). It
// ends after the terminal's Released event, like Subscribe(sid, tid).
func (m *Manager) CreateHeld(ctx context.Context, req Request) (Info, *Subscription, error) {
	return m.createHeld(ctx, req, true)
}

// CreateTerminalHeld is CreateHeld for a terminal/create request: the
// wire form of CreateTerminal with a held subscription.
func (m *Manager) CreateTerminalHeld(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, Events, error) {
	info, sub, err := m.createHeld(ctx, m.requestOf(req), true)
	if err != nil {
		return nil, nil, wireErr(err)
	}
	return &acp.CreateTerminalResponse{TerminalID: info.TerminalID}, sub, nil
}

// SubscribeHeld is Subscribe(sessionID, terminalID) with a held
// subscription: the replay is all the terminal retained (its tail, even
// when larger than the subscriber buffer), and nothing is dropped after
// it.
func (m *Manager) SubscribeHeld(sessionID acp.SessionID, terminalID acp.TerminalID) (*Subscription, error) {
	t, err := m.lookup(sessionID, terminalID)
	if err != nil {
		return nil, err
	}
	return m.subscribeTo(t, true)
}

// waitRoom is deliver's choice for n bytes of output that do not fit in
// the queue: true to queue them after all, false to drop them. A held
// subscription waits, while the command's process runs, until the
// subscriber has made room (or the queue is empty: one chunk larger than
// the buffer goes through alone) or the subscription is closed. It waits
// without the terminal's lock or its own, which deliver's caller holds
// and gets back: the reader is the only writer of output, so nothing is
// published in between that could pass this chunk.
func (s *Subscription) waitRoom(n int) bool {
	if !s.held {
		return false
	}
	t := s.t
	for {
		if s.closed {
			return false
		}
		if s.qBytes == 0 || s.qBytes+n <= s.limit {
			return true
		}
		select {
		case <-t.exited:
			// The drain after the exit never waits (see above).
			return s.qBytes+n <= s.limit+heldDrain
		default:
		}
		s.mu.Unlock()
		t.mu.Unlock()
		select {
		case <-s.room:
		case <-t.exited:
		}
		t.mu.Lock()
		s.mu.Lock()
	}
}

// kick wakes the goroutine waiting on c, if any, without blocking.
func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
