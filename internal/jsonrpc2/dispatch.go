package jsonrpc2

// The reader goroutine frames, classifies and routes each message; notifications, and the
// calls and responses that must follow them, go through one ordered queue that work drains.
// Calls themselves are in incoming.go, responses to ours in call.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// read is the reader goroutine: it frames and classifies lines and routes each message.
func (c *Conn) read() {
	defer c.wg.Done()
	lr := newLineReader(c.r, c.maxSize)
	var err error
	var att []byte // the attachment of the next message
	for !c.closing.Load() && c.waitToRead() {
		line, owned, tooLong, rerr := lr.next()
		if rerr != nil {
			err = rerr
			break
		}
		if tooLong {
			c.tooLong(line)
			att = nil
			continue
		}
		if c.attach && isAttachment(line) {
			if att, err = c.readAttachment(lr, line); err != nil {
				break
			}
			continue
		}
		if len(bytes.TrimLeft(line, " \t\r\n")) == 0 {
			continue
		}
		c.dispatch(line, owned, att)
		att = nil
	}

	drained := c.drainCalls()
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	// No reply can reach the peer now. Notifications already queued are still handled, in
	// order, but with a done ctx, so one that waits for its ctx cannot hold up Wait.
	c.cancel()
	if err == io.EOF || c.closing.Load() {
		err = nil
	}
	c.mu.Lock()
	if c.failure != nil {
		err = c.failure // the read error, if any, is only its consequence
	}
	c.mu.Unlock()
	c.readErr = err
	if !drained {
		c.push(queued{eof: true})
	} else {
		// A call counts as answered once its reply is queued, and the replies of a drain
		// may still wait behind one the peer is slow to read: Done means they are written
		// (or failed, or Close dropped them), so that a host which closes the connection
		// at Done does not drop them. The writer ends once it has written what is queued;
		// a peer that does not read holds it for at most StallTimeout.
		<-c.wdone
	}
	close(c.done)
}

// drainCalls serves, with Options.DrainTimeout, the calls read before the end of input: it
// stops new Calls, lets the worker reach the end of input (failing the Calls still pending,
// which no response can reach now, and starting the calls queued before it), and waits until
// every call read is answered, the drain times out, a write fails or the connection is closed
// or failed. It reports whether it queued the end-of-input item.
func (c *Conn) drainCalls() bool {
	if c.drain <= 0 || c.closing.Load() {
		return false
	}
	c.mu.Lock()
	if c.failure != nil {
		c.mu.Unlock()
		return false
	}
	c.inputEnded = true
	c.mu.Unlock()
	if c.onInputEnd != nil {
		c.onInputEnd()
	}
	c.push(queued{eof: true})
	t := time.NewTimer(c.drain)
	defer t.Stop()
	for !c.wfailed.Load() {
		c.mu.Lock()
		n := c.answering
		c.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-c.drainKick:
		case <-c.ctx.Done(): // Close, or a stalled peer
			return true
		case <-t.C:
			c.logf("jsonrpc2: %d calls still unanswered %s after the end of input; cancelling them", n, c.drain)
			return true
		}
	}
	return true
}

// Hold keeps the drain (Options.DrainTimeout) waiting, as an incoming call being served does,
// until release is called: work a handler started and answered early (ACP v2's prompt turn,
// acknowledged at once) still gets to write what it has to say after the end of input. A
// handler may call it during the drain. It reports false, holding nothing, once the connection
// has stopped. release may be called more than once.
func (c *Conn) Hold() (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return func() {}, false
	}
	c.answering++
	var once sync.Once
	return func() { once.Do(c.answered) }, true
}

// answered counts one incoming call as answered (or dropped) and wakes a draining reader.
func (c *Conn) answered() {
	c.mu.Lock()
	c.answering--
	c.mu.Unlock()
	wake(c.drainKick)
}

// tooLong answers a discarded over-long line, given its start. A response
// to a pending call fails that call (rather than leaving it waiting
// forever); a request is answered -32600 with its id when the start shows
// one, else with id null.
func (c *Conn) tooLong(head []byte) {
	reason := fmt.Sprintf("longer than the %d-byte message limit", c.maxSize)
	c.badMessage("discarded", reason)
	id, isResponse := peekEnvelope(head)
	if isResponse {
		if id.IsValid() {
			c.route(decoded{kind: kindResponse, id: id, err: &Error{Code: CodeInternalError, Message: "jsonrpc2: the response was " + reason + " and was discarded"}}, queuedCost(head))
		}
		return
	}
	c.replyError(id, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("message exceeds the %d-byte limit", c.maxSize)})
}

// peekEnvelope reads the id of a message from its first bytes, and whether
// it is a response, as far as those bytes go.
func peekEnvelope(head []byte) (id ID, isResponse bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ID{}, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return id, isResponse
		}
		var value json.RawMessage
		switch t {
		case "result", "error":
			isResponse = true
		}
		if err := dec.Decode(&value); err != nil {
			return id, isResponse // the value runs past the head
		}
		if t == "id" {
			if v, ok := parseID(bytes.TrimSpace(value)); ok {
				id = v
			}
		}
	}
	return id, isResponse
}

// queuedCost is what an item of the ordered queue made from line counts against
// MaxQueuedBytes: the line, which bounds what the item holds of it (its method, params,
// result or error, copied or pointed into), and the item itself. Counting only params would
// let a peer queue without bound, behind a slow notification handler, the messages that
// have none: notifications with long method names, responses (to ids of ours or not).
func queuedCost(line []byte) int64 { return int64(len(line)) + queuedOverhead }

// queuedOverhead approximates the memory of one queued item beside its line's bytes (the
// queue slot, a Request or response, the call's context), so that a flood of tiny
// messages is bounded too.
const queuedOverhead = 128

// dispatch routes one line, and the attachment that came with it, if any. owned: the line is
// the caller's to keep, so what is decoded may point into it; otherwise it is copied out, the
// line's buffer being reused.
func (c *Conn) dispatch(line []byte, owned bool, att []byte) {
	cost := queuedCost(line) + int64(len(att))
	d := decodeMessage(line)
	if !owned {
		d.own()
	}
	switch d.kind {
	case kindInvalid:
		if d.bare && c.isPending(d.id) {
			// {"id":N} or "error":null for a call of ours: a peer whose
			// handler returned nothing, most likely. Failing the call is
			// better than leaving it to wait for an answer that has come.
			c.badMessage("taken as a failed response", d.err.Message)
			c.route(decoded{kind: kindResponse, id: d.id, err: &Error{Code: CodeInternalError, Message: "jsonrpc2: the response had neither a result nor an error"}}, cost)
			return
		}
		c.badMessage("rejected", d.err.Message)
		c.replyError(d.id, d.err)
	case kindIgnored:
		c.badMessage("ignored", d.note)
	case kindNotification:
		if d.method == methodCancelRequest {
			c.cancelIncoming(d.params)
			return
		}
		c.seq++
		c.push(queued{note: &Request{Method: d.method, Params: d.params, Seq: c.seq, Attachment: att}, size: cost})
	case kindCall:
		c.seq++
		c.startCall(&Request{ID: d.id, Method: d.method, Params: d.params, Seq: c.seq, Attachment: att}, cost)
	case kindResponse:
		c.route(d, cost)
	}
}

// push adds an item to the ordered queue; its size counts against MaxQueuedBytes.
func (c *Conn) push(it queued) {
	c.qmu.Lock()
	c.queue = append(c.queue, it)
	c.qBytes += it.size
	c.qmu.Unlock()
	c.signal()
}

func (c *Conn) signal() { wake(c.kick) }

// wake leaves a wake-up in ch, a channel of capacity 1, unless one is
// already pending.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// work is the worker goroutine: it handles notifications one at a time in arrival order and
// delivers the responses queued behind them. It ends at the end-of-input item.
func (c *Conn) work() {
	defer c.wg.Done()
	for {
		c.qmu.Lock()
		for len(c.queue) == 0 {
			c.busy = false
			c.qmu.Unlock()
			<-c.kick
			c.qmu.Lock()
		}
		it := c.queue[0]
		c.queue[0] = queued{}
		c.queue = c.queue[1:]
		c.busy = true
		if it.size > 0 {
			c.qBytes -= it.size
			wake(c.rkick) // room in the queue: the reader may go on
		}
		c.qmu.Unlock()

		switch {
		case it.eof:
			// Everything that arrived has been handled or delivered; what is still pending
			// will never get a response.
			c.failPending()
			return
		case it.resp != nil:
			c.deliver(it.respID, *it.resp)
		case it.call != nil:
			if c.isStopped() || c.wfailed.Load() {
				// Nobody to answer: do not start it.
				c.endCall(it.call)
				c.release(it.call.slot)
				c.answered()
				continue
			}
			c.launch(it.call)
		case c.closing.Load():
			// Close dropped the notifications not yet handled.
		default:
			if _, err := c.handle(c.notifyCtx, it.note); err != nil {
				c.logf("jsonrpc2: notification %s: %v", it.note.Method, err)
			}
		}
	}
}
