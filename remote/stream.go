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
//
// A lossless stream (window > 0) reads a held subscription, so the
// command waits while the pump does: the pump sends output only below
// taken+window, where taken is the client's latest grant, and otherwise
// waits for the next grant. It never waits for a released terminal:
// output nobody can ask for any more is skipped, and the exit and the
// release follow.
type stream struct {
	sid acp.SessionID
	tid acp.TerminalID
	key string

	grant    chan struct{} // wakes a pump waiting for room
	released chan struct{} // closed once the terminal was released
	relOnce  sync.Once

	mu     sync.Mutex
	pid    int
	seq    uint64        // the last Seq sent
	stop   func()        // stops the current pump
	done   chan struct{} // closed when the current pump has returned
	window uint64        // the current pump's; 0 for a lossy stream
	tag    string        // the create's CreateRequest.Tag, for the Started notification
	taken  uint64        // the client has taken the output before this offset
}

// maxWindow keeps taken+window from overflowing.
const maxWindow = 1 << 62

func (st *stream) nextSeq() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seq++
	return st.seq
}

// grantTo records a grant and wakes the pump.
func (st *stream) grantTo(taken uint64) {
	st.mu.Lock()
	st.taken = max(st.taken, taken)
	st.mu.Unlock()
	kick(st.grant)
}

func (st *stream) markReleased() { st.relOnce.Do(func() { close(st.released) }) }

// room waits until the client may be sent output at offset off, and
// returns how many bytes from there: base is the first offset of the
// pump's stream (the client has taken nothing before it). It returns 0
// once the terminal is released, and false when ctx ends.
func (st *stream) room(ctx context.Context, off, base uint64) (uint64, bool) {
	for {
		st.mu.Lock()
		end := max(st.taken, base) + st.window
		st.mu.Unlock()
		if off < end {
			return end - off, true
		}
		select {
		case <-st.grant:
		case <-st.released:
			return 0, true
		case <-ctx.Done():
			return 0, false
		}
	}
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// startStream starts (or restarts, after a cursor) the stream of a
// terminal, lossless when window > 0. sub, when not nil, is the
// subscription to read (held for a lossless stream); else the stream
// subscribes. A restart waits for the previous pump to stop, so that the
// notifications of one terminal keep their order.
func (s *server) startStream(sid acp.SessionID, tid acp.TerminalID, after, window uint64, tag string, sub terminal.Events) error {
	if sub == nil {
		var err error
		if window > 0 {
			sub, err = s.mgr.SubscribeHeld(sid, tid)
		} else {
			sub, err = s.mgr.Subscribe(sid, tid)
		}
		if err != nil {
			return err
		}
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
		st = &stream{sid: sid, tid: tid, key: key, grant: make(chan struct{}, 1), released: make(chan struct{})}
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
	st.stop, st.done, st.window = cancel, done, min(window, maxWindow)
	if tag != "" {
		st.tag = tag
	}
	st.mu.Unlock()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		defer cancel()
		defer sub.Close()
		if s.pump(ctx, st, sub, after, window > 0) {
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
func (s *server) pump(ctx context.Context, st *stream, sub terminal.Events, after uint64, lossless bool) (released bool) {
	<-s.ready      // the connection's handlers run before NewConn has returned
	var off uint64 // offset of the next byte of output
	out := outputSender{s: s, st: st, lossless: lossless}
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
			window, tag := st.window, st.tag
			st.mu.Unlock()
			if after > 0 {
				continue // a restarted stream: the client has seen it
			}
			if !lossless {
				window = 0
			}
			started := &StartedNotification{
				SessionID: st.sid, TerminalID: st.tid, Seq: st.nextSeq(),
				Argv: ev.Info.Argv, Cwd: ev.Info.Cwd, PID: ev.Info.PID, OutputByteLimit: ev.Info.OutputByteLimit,
				Window: window, Tag: tag, Stdin: ev.Info.Stdin,
			}
			if ev.Info.PTY != nil {
				started.PTY = &Size{Cols: ev.Info.PTY.Cols, Rows: ev.Info.PTY.Rows}
			}
			method, msg = NotifyStarted, started
		case terminal.EventOutput:
			start, data := off, ev.Data
			off += uint64(len(data))
			if off <= after {
				continue
			}
			if start < after {
				data, start = data[after-start:], after
			}
			if !out.send(ctx, start, data) {
				return false
			}
			continue
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
		// Notify returns once the message is written. A lossy stream's
		// subscription meanwhile queues, then drops, and the command
		// never waits for us; a lossless one holds the command.
		if err := s.conn.Notify(ctx, method, msg); err != nil {
			return false
		}
	}
}

// outputSender sends one pump's output in chunks of at most maxChunk,
// and for a lossless stream only as far as the client has room.
type outputSender struct {
	s        *server
	st       *stream
	lossless bool
	started  bool
	base     uint64 // the offset of the first byte this pump sent
}

// send sends data, the output at offset off; false when ctx ended or the
// connection failed.
func (o *outputSender) send(ctx context.Context, off uint64, data []byte) bool {
	if !o.started {
		o.started, o.base = true, off
	}
	for len(data) > 0 {
		n := min(len(data), maxChunk)
		if o.lossless {
			room, ok := o.st.room(ctx, off, o.base)
			if !ok {
				return false
			}
			if room == 0 {
				return true // released: nobody waits for the rest
			}
			n = int(min(uint64(n), room))
		}
		msg := OutputNotification{SessionID: o.st.sid, TerminalID: o.st.tid, Seq: o.st.nextSeq(), Offset: off, Data: data[:n]}
		var err error
		if o.s.attach.Load() {
			err = o.s.conn.NotifyAppend(ctx, NotifyOutput, msg.appendHeader, msg.Data)
		} else {
			err = o.s.conn.NotifyAppend(ctx, NotifyOutput, msg.appendJSON, nil)
		}
		if err != nil {
			return false
		}
		off += uint64(n)
		data = data[n:]
	}
	return true
}
