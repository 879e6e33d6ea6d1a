package jsonrpc2

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
)

// Outgoing messages go through one writer goroutine, in the order they were
// sent, so that no sender ever blocks in Write: a peer that stops reading
// fills the pipe and blocks the writer, but a Call or Notify still returns
// when its ctx ends.

// outgoing is one encoded message waiting for the writer.
type outgoing struct {
	buf   *bytes.Buffer
	state atomic.Int32 // outQueued, then outTaken by the writer or outDropped by the sender
	done  chan error   // buffered; the result of the write once taken
}

const (
	outQueued = iota
	outTaken
	outDropped
)

// send queues buf for the writer and waits until it is written or ctx
// ends. When ctx ends first, send returns ctx.Err() and reports whether
// the message may have reached the peer: false if it was still queued (it
// is then never written), true if the writer had taken it.
func (c *Conn) send(ctx context.Context, buf *bytes.Buffer) (maybeSent bool, err error) {
	m := &outgoing{buf: buf, done: make(chan error, 1)}
	c.oqmu.Lock()
	if c.wstopped || c.closing.Load() {
		c.oqmu.Unlock()
		putBuf(buf)
		return false, ErrClosed
	}
	c.oq = append(c.oq, m)
	c.oqmu.Unlock()
	c.wakeWriter()
	if c.onQueued != nil {
		c.onQueued()
	}
	select {
	case err := <-m.done:
		return true, err
	case <-ctx.Done():
		if m.state.CompareAndSwap(outQueued, outDropped) {
			return false, ctx.Err()
		}
		return true, ctx.Err()
	}
}

// queueCancel queues $/cancel_request for call n. The writer sends queued
// cancellations before any other message, so the peer sees one before
// whatever its caller sends next, and nobody waits for it to be written.
func (c *Conn) queueCancel(n int64) {
	c.oqmu.Lock()
	if c.wstopped {
		c.oqmu.Unlock()
		return
	}
	c.cancels = append(c.cancels, n)
	c.oqmu.Unlock()
	c.wakeWriter()
}

func (c *Conn) wakeWriter() { wake(c.wkick) }

// writeLoop is the writer goroutine. It stops when the connection's ctx
// ends (end of input or Close) and fails what is still queued.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.wkick:
		case <-c.ctx.Done():
			c.stopWriter()
			return
		}
		for c.writeNext() {
		}
	}
}

// writeNext writes the queued cancellations and then one queued message,
// and reports whether there may be more.
func (c *Conn) writeNext() bool {
	c.oqmu.Lock()
	ids := c.cancels
	c.cancels = nil
	var m *outgoing
	if len(c.oq) > 0 {
		m = c.oq[0]
		c.oq[0] = nil
		c.oq = c.oq[1:]
	}
	c.oqmu.Unlock()
	for _, n := range ids {
		c.writeCancel(n)
	}
	if m == nil {
		return false
	}
	if m.state.CompareAndSwap(outQueued, outTaken) {
		m.done <- c.writeBytes(m.buf.Bytes())
	}
	putBuf(m.buf)
	return true
}

// stopWriter fails every queued message; later sends fail at once.
func (c *Conn) stopWriter() {
	c.oqmu.Lock()
	c.wstopped = true
	q := c.oq
	c.oq, c.cancels = nil, nil
	c.oqmu.Unlock()
	for _, m := range q {
		if m.state.CompareAndSwap(outQueued, outTaken) {
			m.done <- ErrClosed
		}
		putBuf(m.buf)
	}
}

func (c *Conn) writeCancel(n int64) {
	buf, err := encode(wireRequest{JSONRPC: "2.0", Method: methodCancelRequest, Params: struct {
		RequestID int64 `json:"requestId"`
	}{n}})
	if err != nil {
		c.logf("jsonrpc2: encoding %s: %v", methodCancelRequest, err)
		return
	}
	// A failure is logged by writeBytes: the cancelled caller already has
	// its answer.
	c.writeBytes(buf.Bytes())
	putBuf(buf)
}

// writeBytes writes one message; only the writer goroutine calls it. After
// a failed write the stream may hold half a message, so the error sticks.
func (c *Conn) writeBytes(b []byte) error {
	if c.werr != nil {
		return c.werr
	}
	if _, err := c.w.Write(b); err != nil {
		c.werr = fmt.Errorf("%w: write: %w", ErrClosed, err)
		if !c.closing.Load() {
			c.logf("jsonrpc2: write failed; sending nothing more: %v", err)
		}
	}
	return c.werr
}
