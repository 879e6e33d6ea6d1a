package jsonrpc2

// The incoming side: the reader goroutine routes each message; calls get a goroutine each;
// notifications, and the responses that must follow them, go through one ordered queue.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// read is the reader goroutine: it frames and classifies lines and routes each message.
func (c *Conn) read() {
	defer c.wg.Done()
	lr := newLineReader(c.r, c.maxSize)
	var err error
	for !c.closing.Load() {
		line, tooLong, rerr := lr.next()
		if rerr != nil {
			err = rerr
			break
		}
		if tooLong {
			c.tooLong(line)
			continue
		}
		if len(bytes.TrimLeft(line, " \t\r\n")) == 0 {
			continue
		}
		c.dispatch(line)
	}

	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	// No reply can reach the peer now. Notifications already queued are still handled, in
	// order, but with a done ctx, so one that waits for its ctx cannot hold up Wait.
	c.cancel()
	if err == io.EOF || c.closing.Load() {
		err = nil
	}
	c.readErr = err
	c.enqueue(queued{eof: true})
	close(c.done)
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
			c.route(decoded{kind: kindResponse, id: id, err: &Error{Code: CodeInternalError, Message: "jsonrpc2: the response was " + reason + " and was discarded"}})
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

func (c *Conn) dispatch(line []byte) {
	d := decodeMessage(line)
	switch d.kind {
	case kindInvalid:
		c.badMessage("rejected", d.err.Message)
		c.replyError(d.id, d.err)
	case kindIgnored:
		c.badMessage("ignored", d.note)
	case kindNotification:
		if d.method == methodCancelRequest {
			c.cancelIncoming(d.params)
			return
		}
		c.enqueue(queued{note: &Request{Method: d.method, Params: d.params}})
	case kindCall:
		c.startCall(&Request{ID: d.id, Method: d.method, Params: d.params})
	case kindResponse:
		c.route(d)
	}
}

func (c *Conn) startCall(req *Request) {
	key := req.ID.key()
	ctx, cancel := context.WithCancel(c.ctx)
	f := &inflightCall{cancel: cancel}
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		cancel()
		c.replyError(req.ID, &Error{Code: CodeInvalidRequest, Message: "request id " + req.ID.String() + " is already in use"})
		return
	}
	c.inflight[key] = f
	c.mu.Unlock()

	c.wg.Add(1) // the reader holds a count, so this never races with a Wait at zero
	go func() {
		defer c.wg.Done()
		res, err := c.handle(ctx, req)
		c.mu.Lock()
		delete(c.inflight, key)
		cancelled, stopped := f.cancelled, c.stopped
		c.mu.Unlock()
		cancel()
		if stopped {
			return // the peer is gone or we are closing: nobody to answer
		}
		if err != nil {
			c.replyError(req.ID, c.toWireError(err, cancelled))
			return
		}
		c.replyResult(req.ID, res)
	}()
}

func (c *Conn) handle(ctx context.Context, req *Request) (any, error) {
	if c.h == nil {
		return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	return c.h.Handle(ctx, req)
}

func (c *Conn) toWireError(err error, cancelled bool) *Error {
	if cancelled && errors.Is(err, context.Canceled) {
		return &Error{Code: CodeRequestCancelled, Message: "request cancelled"}
	}
	if c.toWire != nil {
		if e := c.toWire(err); e != nil {
			return e
		}
	}
	if e, ok := errors.AsType[*Error](err); ok && e != nil {
		return e
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

// cancelIncoming serves $/cancel_request {"requestId": id}.
func (c *Conn) cancelIncoming(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		c.logf("jsonrpc2: ignored %s with bad params: %v", methodCancelRequest, err)
		return
	}
	id, ok := parseID(p.RequestID)
	if !ok || !id.IsValid() {
		c.logf("jsonrpc2: ignored %s without a usable requestId", methodCancelRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.inflight[id.key()]; f != nil {
		f.cancelled = true
		f.cancel()
	}
	// An unknown id is a call that already finished: nothing to do.
}

// route hands a response to its caller, after the notifications that arrived before it.
func (c *Conn) route(d decoded) {
	n, err := strconv.ParseInt(d.id.raw, 10, 64)
	if err != nil {
		c.logf("jsonrpc2: dropped a response with id %s, which no call of ours has", d.id)
		return
	}
	resp := &response{result: d.result}
	if d.err != nil {
		resp.err = d.err
	}
	c.mu.Lock()
	p := c.pending[n]
	c.mu.Unlock()
	if p == nil || !p.direct {
		c.qmu.Lock()
		if c.busy || len(c.queue) > 0 {
			c.queue = append(c.queue, queued{resp: resp, respID: n})
			c.qmu.Unlock()
			c.signal()
			return
		}
		c.qmu.Unlock()
	}
	c.deliver(n, *resp)
}

func (c *Conn) deliver(n int64, r response) {
	c.mu.Lock()
	p := c.pending[n]
	delete(c.pending, n)
	c.mu.Unlock()
	if p == nil {
		if !c.closing.Load() {
			c.logf("jsonrpc2: dropped a response for call %d, which is not pending (cancelled or unknown)", n)
		}
		return
	}
	p.ch <- r
}

// forget removes a pending call; false means its response (or ErrClosed) was already delivered.
func (c *Conn) forget(n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[n]
	delete(c.pending, n)
	return ok
}

func (c *Conn) failPending() {
	c.mu.Lock()
	ps := c.pending
	c.pending = make(map[int64]*pendingCall)
	c.mu.Unlock()
	for _, p := range ps {
		p.ch <- response{err: ErrClosed}
	}
}

func (c *Conn) enqueue(it queued) {
	c.qmu.Lock()
	c.queue = append(c.queue, it)
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
		c.qmu.Unlock()

		switch {
		case it.eof:
			// Everything that arrived has been handled or delivered; what is still pending
			// will never get a response.
			c.failPending()
			return
		case it.resp != nil:
			c.deliver(it.respID, *it.resp)
		case c.closing.Load():
			// Close dropped the notifications not yet handled.
		default:
			if _, err := c.handle(c.notifyCtx, it.note); err != nil {
				c.logf("jsonrpc2: notification %s: %v", it.note.Method, err)
			}
		}
	}
}
