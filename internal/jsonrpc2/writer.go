package jsonrpc2

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// Outgoing messages go through one writer goroutine, in the order they were
// sent, so that no sender ever blocks in Write: a peer that stops reading
// fills the pipe and blocks the writer, but a Call or Notify still returns
// when its ctx ends.
//
// The queue is bounded in bytes (Options.MaxQueuedBytes). A sender first
// takes the turn, waits until the queue is below the bound, and only then
// encodes its message and queues it: the values waiting to be sent stay as
// the senders hold them, and at most one encoded message beyond the bound
// exists at a time. A peer that leaves a write blocked for StallTimeout ends
// the connection.
//
// Two shortcuts keep a round trip to as few goroutine switches as the work
// needs. A handler's reply, which no ctx bounds and nobody waits for, is
// written by the handler's goroutine itself when nothing is being written or
// queued: waking the writer would only add a switch. And the writer writes
// the small messages queued at once (concurrent calls) with one Write.

// writeChunk is the most one Write is given, so that a large message written
// to a slow but steady reader keeps resetting the stall timer.
const writeChunk = 256 << 10

// Messages up to batchSize bytes each, queued one behind another, are joined
// into one Write of at most batchSize bytes.
const batchSize = 16 << 10

// outgoing is one encoded message waiting for the writer.
type outgoing struct {
	buf   *bytes.Buffer
	call  int64        // the Call that sent it, which learns of a failed write as its response; 0 for others
	state atomic.Int32 // outQueued, then outTaken by the writer or outDropped by the sender
	done  chan error   // buffered, for a Notify: the result of the write once taken
}

const (
	outQueued = iota
	outTaken
	outDropped
)

// send queues the message that enc encodes and waits until it is written
// or ctx ends. When ctx ends first, send returns ctx.Err() and reports
// whether the message may have reached the peer: false if it was still
// queued (it is then never written), true if the writer had taken it. A
// write that was over when ctx ended is reported as such, whichever of the
// two send saw first.
func (c *Conn) send(ctx context.Context, enc func() (*bytes.Buffer, error)) (maybeSent bool, err error) {
	m, err := c.enqueue(ctx, sendWait, 0, enc)
	if err != nil {
		return false, err
	}
	select {
	case err := <-m.done:
		return true, err
	case <-ctx.Done():
		if m.state.CompareAndSwap(outQueued, outDropped) {
			return false, ctx.Err()
		}
		// The writer has it. When the write is already over, its result
		// stands: a notification the peer has read was sent, whenever
		// ctx ended.
		select {
		case err := <-m.done:
			return true, err
		default:
			return true, ctx.Err()
		}
	}
}

// How enqueue hands a message over.
const (
	sendWait   = iota // to the writer, with a done channel to wait on (Notify)
	sendCall          // to the writer; a failed write is delivered to the Call as its response
	sendReply         // to the writer; nobody waits
	sendDirect        // a handler's reply: written by the caller when the writer is idle, else queued
)

// enqueue takes the turn, waits for room in the queue, encodes the message
// with enc and queues it for the writer, or with sendDirect may write it
// itself (the message returned is then already written). It fails when ctx
// ends first, when the writer has stopped, or with enc's error. call is
// the id of a Call's request (sendCall).
func (c *Conn) enqueue(ctx context.Context, how int, call int64, enc func() (*bytes.Buffer, error)) (*outgoing, error) {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.wdone:
		return nil, c.closedErr()
	}
	turnHeld := true
	defer func() {
		if turnHeld {
			<-c.turn
		}
	}()
	for {
		c.oqmu.Lock()
		stopped, room := c.wstopped || c.closing.Load() || c.wfailed.Load(), c.oqBytes < c.maxQueued
		c.oqmu.Unlock()
		if stopped {
			return nil, c.closedErr()
		}
		if room {
			break
		}
		select {
		case <-c.budgetKick:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.wdone:
			return nil, c.closedErr()
		}
	}
	buf, err := enc()
	if err != nil {
		return nil, err
	}
	m := &outgoing{buf: buf, call: call}
	if how == sendWait {
		m.done = make(chan error, 1)
	}
	c.oqmu.Lock()
	if c.wstopped || c.closing.Load() {
		c.oqmu.Unlock()
		putBuf(buf)
		return nil, c.closedErr()
	}
	c.oqBytes += int64(buf.Len())
	if how == sendDirect && !c.writing && len(c.oq) == 0 && len(c.cancels) == 0 {
		// Nothing is ahead of it: the order is kept, and the writer
		// would only be woken to do what this goroutine can.
		c.writing = true
		c.oqmu.Unlock()
		<-c.turn // the next sender may encode meanwhile
		turnHeld = false
		m.state.Store(outTaken)
		c.writeDirect(m)
		return m, nil
	}
	c.oq = append(c.oq, m)
	c.oqmu.Unlock()
	c.wakeWriter()
	if c.onQueued != nil {
		c.onQueued()
	}
	return m, nil
}

// writeDirect writes a reply on the handler's goroutine, holding c.writing
// as the writer does while it writes. A failure is the writer's to report
// (writeBytes): nobody waits for a reply.
func (c *Conn) writeDirect(m *outgoing) {
	c.writeBytes(m.buf.Bytes())
	c.oqmu.Lock()
	c.writing = false
	c.oqBytes -= int64(m.buf.Len())
	more := len(c.oq) > 0 || len(c.cancels) > 0
	c.oqmu.Unlock()
	putBuf(m.buf)
	if more || c.ctx.Err() != nil {
		// Messages queued behind this one, or a writer that is stopping
		// and waits for this write to end before it writes what is left.
		c.wakeWriter()
	}
	wake(c.budgetKick)
	wake(c.rkick)
}

// queueCancel queues $/cancel_request for call n. The writer sends queued
// cancellations before any other message, so the peer sees one before
// whatever its caller sends next, and nobody waits for it to be written.
// They stay outside the byte bound: there is at most one per Call.
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
// ends (end of input, Close or a failure) and fails what is still queued.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.wkick:
		case <-c.ctx.Done():
			// At the end of input, what is queued is still written (the
			// peer may read on: the answer to its last, malformed line,
			// say); after Close, nothing is.
			for !c.closing.Load() {
				more, busy := c.writeNext()
				if busy {
					<-c.wkick // writeDirect wakes us when it is done
					continue
				}
				if !more {
					break
				}
			}
			c.stopWriter()
			return
		}
		coalesce()
		for {
			if more, _ := c.writeNext(); !more {
				break
			}
		}
	}
}

// coalesce lets the goroutines that are ready to run do so before the
// writer takes its queue, so that messages made together (the exits of
// commands that end at once, the replies to a burst of requests) leave
// in one Write. A peer behind a relay that pays for every write it
// forwards sees the difference: through podman's exec stdio, 50 commands
// ending together cost 24–79 ms more than locally without it and none
// with it (BenchmarkPodman/concurrent50). With nobody else ready it
// returns at once.
func coalesce() {
	for range 3 {
		runtime.Gosched()
	}
}

// writeNext writes the queued cancellations and then the next queued
// message, or the next few small ones with one Write, and reports whether
// there may be more. busy means a reply is being written by its handler,
// which wakes the writer if anything was queued behind it.
func (c *Conn) writeNext() (more, busy bool) {
	c.oqmu.Lock()
	if c.writing {
		c.oqmu.Unlock()
		return false, true
	}
	ids := c.cancels
	c.cancels = nil
	n := 0
	if len(c.oq) > 0 {
		n = 1
		for size := c.oq[0].buf.Len(); size <= batchSize && n < len(c.oq); n++ {
			if size += c.oq[n].buf.Len(); size > batchSize {
				break
			}
		}
	}
	if n == 0 && len(ids) == 0 {
		c.oqmu.Unlock()
		return false, false
	}
	ms := append(c.batch[:0], c.oq[:n]...)
	clear(c.oq[:n])
	c.oq = c.oq[n:]
	c.writing = true
	c.oqmu.Unlock()
	for _, n := range ids {
		c.writeCancel(n)
	}
	// Take the messages their senders have not dropped, and write them.
	taken, size := ms[:0], int64(0)
	for _, m := range ms {
		size += int64(m.buf.Len())
		if m.state.CompareAndSwap(outQueued, outTaken) {
			taken = append(taken, m)
		} else {
			putBuf(m.buf)
		}
	}
	var err error
	switch len(taken) {
	case 0:
	case 1:
		err = c.writeBytes(taken[0].buf.Bytes())
	default:
		joined := c.joined[:0]
		for _, m := range taken {
			joined = append(joined, m.buf.Bytes()...)
		}
		c.joined = joined
		err = c.writeBytes(joined)
	}
	for _, m := range taken {
		c.written(m, err)
		putBuf(m.buf)
	}
	clear(ms)
	c.batch = ms[:0]
	c.oqmu.Lock()
	c.writing = false
	c.oqBytes -= size
	c.oqmu.Unlock()
	// Room in the queue: for the sender holding the turn, and for the reader.
	wake(c.budgetKick)
	wake(c.rkick)
	return true, false
}

// written tells the sender of m how its write went: a Notify through done,
// a Call only when it failed, as its response (unless one came already), a
// reply nobody.
func (c *Conn) written(m *outgoing, err error) {
	switch {
	case m.done != nil:
		m.done <- err
	case m.call != 0 && err != nil:
		c.deliver(m.call, response{err: err})
	}
}

// stopWriter fails every queued message; later sends fail at once.
func (c *Conn) stopWriter() {
	c.oqmu.Lock()
	c.wstopped = true
	q := c.oq
	c.oq, c.cancels, c.oqBytes = nil, nil, 0
	c.oqmu.Unlock()
	close(c.wdone)
	err := c.closedErr()
	for _, m := range q {
		if m.state.CompareAndSwap(outQueued, outTaken) {
			c.written(m, err)
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
// Each Write is watched by the stall timer.
func (c *Conn) writeBytes(b []byte) error {
	for c.werr == nil && len(b) > 0 {
		k := min(len(b), writeChunk)
		c.armStall()
		_, err := c.w.Write(b[:k])
		if c.disarmStall() {
			c.werr = c.closedErr()
			break
		}
		if err != nil {
			c.werr = fmt.Errorf("%w: write: %w", ErrClosed, err)
			// Later sends fail at once instead of encoding, in vain, what
			// a flood of calls from a peer that has gone still asks for.
			c.wfailed.Store(true)
			wake(c.drainKick) // a draining reader: nobody can be answered now
			if !c.closing.Load() {
				c.logf("jsonrpc2: write failed; sending nothing more: %v", err)
				// Messages were lost before anyone asked to close:
				// Close reports it. A write failing because Close
				// closed w is no news.
				c.lostErr = fmt.Errorf("jsonrpc2: a write failed, and nothing more was sent: %w", err)
			}
		}
		b = b[k:]
	}
	return c.werr
}

// armStall starts the stall timer for one Write.
func (c *Conn) armStall() {
	if c.stall < 0 {
		return
	}
	if c.stallTimer == nil {
		c.stallTimer = time.AfterFunc(c.stall, c.stalled)
		return
	}
	c.stallTimer.Reset(c.stall)
}

// disarmStall stops the stall timer after a Write and reports whether it
// fired. If it did, it also waits for its function to return, so that no
// goroutine of the Conn outlives the writer.
func (c *Conn) disarmStall() bool {
	if c.stallTimer == nil || c.stallTimer.Stop() {
		return false
	}
	<-c.stallFired
	return true
}

// stalled runs when a Write has been blocked for StallTimeout: the peer has
// stopped reading. It ends the connection, which closes w and so unblocks the
// Write (for a pipe or socket; for a writer that is not an io.Closer, the
// writer goroutine stays in Write until the peer reads or Close returns).
func (c *Conn) stalled() {
	defer close(c.stallFired)
	c.oqmu.Lock()
	queued := c.oqBytes
	c.oqmu.Unlock()
	c.fail(fmt.Errorf("jsonrpc2: %w for %s with %d bytes queued", ErrPeerStalled, c.stall, queued))
}
