package remote

import (
	"context"
	"errors"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// stream is the output stream of one terminal: one pump at a time
// forwards the terminal's events as notifications.
type stream struct {
	sid acp.SessionID
	tid acp.TerminalID
	key string
	pid int

	mu   sync.Mutex
	seq  uint64        // the last Seq sent
	stop func()        // stops the current pump
	done chan struct{} // closed when the current pump has returned
}

func (st *stream) nextSeq() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seq++
	return st.seq
}

// startStream starts (or restarts, after a cursor) the stream of a
// terminal. A restart waits for the previous pump to stop, so that the
// notifications of one terminal keep their order.
func (s *server) startStream(sid acp.SessionID, tid acp.TerminalID, after uint64) error {
	sub, err := s.mgr.Subscribe(sid, tid)
	if err != nil {
		return err
	}
	key := string(sid) + "\x00" + string(tid)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sub.Close()
		return terminal.ErrClosed
	}
	st := s.streams[key]
	if st == nil {
		st = &stream{sid: sid, tid: tid, key: key}
		s.streams[key] = st
	}
	s.mu.Unlock()

	st.mu.Lock()
	if st.stop != nil {
		st.stop()
		done := st.done
		st.mu.Unlock()
		<-done
		st.mu.Lock()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	st.stop, st.done = cancel, done
	st.mu.Unlock()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		defer cancel()
		defer sub.Close()
		if s.pump(ctx, st, sub, after) {
			s.mu.Lock()
			if s.streams[key] == st {
				delete(s.streams, key)
			}
			s.mu.Unlock()
		}
	}()
	return nil
}

// pump forwards one subscription's events, skipping output before the
// cursor after. It reports whether the terminal was released (the stream
// is over for good).
func (s *server) pump(ctx context.Context, st *stream, sub *terminal.Subscription, after uint64) (released bool) {
	<-s.ready      // the connection's handlers run before NewConn has returned
	var off uint64 // offset of the next byte of output
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return errors.Is(err, terminal.ErrSubscriptionClosed)
		}
		off += ev.Dropped
		var msg any
		method := ""
		switch ev.Kind {
		case terminal.EventCreated:
			if ev.Info == nil {
				continue
			}
			st.mu.Lock()
			st.pid = ev.Info.PID
			st.mu.Unlock()
			if after > 0 {
				continue // a restarted stream: the client has seen it
			}
			method, msg = NotifyStarted, &StartedNotification{
				SessionID: st.sid, TerminalID: st.tid, Seq: st.nextSeq(),
				Argv: ev.Info.Argv, Cwd: ev.Info.Cwd, PID: ev.Info.PID, OutputByteLimit: ev.Info.OutputByteLimit,
			}
		case terminal.EventOutput:
			start, data := off, ev.Data
			off += uint64(len(data))
			if off <= after {
				continue
			}
			if start < after {
				data, start = data[after-start:], after
			}
			method, msg = NotifyOutput, &OutputNotification{
				SessionID: st.sid, TerminalID: st.tid, Seq: st.nextSeq(), Offset: start, Data: data,
			}
		case terminal.EventExited:
			n := &ExitNotification{SessionID: st.sid, TerminalID: st.tid, Seq: st.nextSeq(), Total: off}
			if ev.Status != nil {
				n.ExitStatus, n.TimedOut = *ev.Status, ev.TimedOut
			}
			method, msg = NotifyExit, n
		case terminal.EventReleased:
			_ = s.conn.Notify(ctx, NotifyReleased, &ReleasedNotification{SessionID: st.sid, TerminalID: st.tid, Seq: st.nextSeq()})
			return true
		default:
			continue
		}
		// Notify returns once the message is written: while the
		// transport is slow the subscription queues, then drops, and
		// the command never waits for us.
		if err := s.conn.Notify(ctx, method, msg); err != nil {
			return false
		}
	}
}
