package jsonrpc2

// Flow control on the incoming side: the reader stops reading while the peer has us at a
// bound (Options.MaxConcurrentCalls, Options.MaxQueuedBytes), and resumes when a handler
// finishes, the ordered queue shrinks or the outgoing queue drains. Only the reader waits
// here, on rkick.
//
// Why this cannot deadlock: the reader waits only for things that happen without it reading.
// A handler's place is given up while it waits in a Call or Notify on this Conn (the only wait
// that needs the reader), and taking it back on return never blocks, so a running handler
// always finishes as far as the reader is concerned. The ordered queue drains as long as its
// notification handlers return; the one that waits in a Call lets the reader go on (see
// canRead). The outgoing queue drains as the peer reads, and a peer that does not is failed
// after StallTimeout, which ends every wait.

import "context"

// callSlot is one incoming call's place under MaxConcurrentCalls. Guarded by Conn.smu.
type callSlot struct {
	c        *Conn
	waiting  int  // Calls and Notifies of the handler now waiting on the peer
	released bool // the handler is done with its place for good
}

type slotKey struct{}

// slotOf returns the place of the handler whose ctx this is, if it is one of ours.
func (c *Conn) slotOf(ctx context.Context) *callSlot {
	if s, ok := ctx.Value(slotKey{}).(*callSlot); ok && s.c == c {
		return s
	}
	return nil
}

// acquireSlot waits for a place for one more call; nil means the connection is ending.
func (c *Conn) acquireSlot() *callSlot {
	for {
		c.smu.Lock()
		if c.maxCalls < 0 || c.running < c.maxCalls {
			c.running++
			c.smu.Unlock()
			return &callSlot{c: c}
		}
		c.smu.Unlock()
		select {
		case <-c.rkick:
		case <-c.ctx.Done():
			return nil
		}
	}
}

// release gives up a call's place for good.
func (c *Conn) release(s *callSlot) {
	c.smu.Lock()
	if !s.released && s.waiting == 0 {
		c.running--
	}
	s.released = true
	c.smu.Unlock()
	wake(c.rkick)
}

// suspend gives up the place while the handler waits on the peer.
func (c *Conn) suspend(s *callSlot) {
	c.smu.Lock()
	if !s.released && s.waiting == 0 {
		c.running--
	}
	s.waiting++
	c.smu.Unlock()
	wake(c.rkick)
}

// resume takes the place back, without waiting: the count may briefly exceed the bound.
func (c *Conn) resume(s *callSlot) {
	c.smu.Lock()
	s.waiting--
	if !s.released && s.waiting == 0 {
		c.running++
	}
	c.smu.Unlock()
}

// notifyCallStarted and notifyCallEnded count the Calls made by notification handlers.
func (c *Conn) notifyCallStarted() {
	c.qmu.Lock()
	c.notifyWaiting++
	c.qmu.Unlock()
	wake(c.rkick)
}

func (c *Conn) notifyCallEnded() {
	c.qmu.Lock()
	c.notifyWaiting--
	c.qmu.Unlock()
}

// waitToRead waits until the reader may read another message; false means the connection is
// ending.
func (c *Conn) waitToRead() bool {
	for !c.canRead() {
		select {
		case <-c.rkick:
		case <-c.ctx.Done():
			return false
		}
	}
	return true
}

// canRead reports whether both queues are below MaxQueuedBytes. The ordered queue does not
// count while a notification handler waits in a Call: the response it waits for is still
// to be read.
func (c *Conn) canRead() bool {
	c.oqmu.Lock()
	out := c.oqBytes < c.maxQueued || c.wstopped
	c.oqmu.Unlock()
	if !out {
		return false
	}
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.qBytes < c.maxQueued || c.notifyWaiting > 0
}
