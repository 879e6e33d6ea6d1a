package jsonrpc2

// Calls from the peer: each runs in a goroutine of its own, under MaxConcurrentCalls, can be
// cancelled by $/cancel_request, and is answered once with its result or error.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
)

// incomingCall is a call read from the peer, registered in inflight, holding a place under
// MaxConcurrentCalls, and started at once or queued behind earlier notifications.
type incomingCall struct {
	req    *Request
	ctx    context.Context
	cancel context.CancelFunc
	f      *inflightCall
	slot   *callSlot
}

// startCall takes a place for the call, waiting for one (and so not reading) while
// MaxConcurrentCalls handlers hold theirs, then starts it, or queues it when notifications
// that arrived before it are still to be handled. cost is what it counts against
// MaxQueuedBytes while queued.
func (c *Conn) startCall(req *Request, cost int64) {
	if c.wfailed.Load() {
		// A write failed, so no answer can reach the peer: running the handler would only
		// spend work (or start side effects) for nobody. A peer that has gone leaves its
		// pipelined calls behind in the pipe, and they are read before the end of input.
		return
	}
	s := c.acquireSlot()
	if s == nil {
		return // the connection is ending: nobody to answer
	}
	key := req.ID.key()
	ctx, cancel := context.WithCancel(context.WithValue(c.ctx, slotKey{}, s))
	f := &inflightCall{cancel: cancel}
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		cancel()
		c.release(s)
		c.replyError(req.ID, &Error{Code: CodeInvalidRequest, Message: "request id " + req.ID.String() + " is already in use"})
		return
	}
	c.inflight[key] = f
	c.answering++
	c.mu.Unlock()

	ic := &incomingCall{req: req, ctx: ctx, cancel: cancel, f: f, slot: s}
	c.qmu.Lock()
	// A notification handler waiting in its own Call may be waiting for the peer, which may
	// be waiting for this call's answer: such a handler does not hold calls back.
	if len(c.queue) > 0 || (c.busy && c.notifyWaiting == 0) {
		c.queue = append(c.queue, queued{call: ic, size: cost})
		c.qBytes += cost
		c.qmu.Unlock()
		c.signal()
		return
	}
	c.qmu.Unlock()
	c.launch(ic)
}

// launch runs a call's handler in its own goroutine. The caller (the reader or the worker)
// holds a count in wg, so this never races with a Wait at zero.
func (c *Conn) launch(ic *incomingCall) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.answered()       // last: once the reply is queued or written
		defer c.release(ic.slot) // after the reply is queued or written: see Options.MaxConcurrentCalls
		res, err := c.handle(ic.ctx, ic.req)
		cancelled, stopped := c.endCall(ic)
		if stopped {
			return // the peer is gone or we are closing: nobody to answer
		}
		if err != nil {
			c.reply(ic.req.ID, nil, c.toWireError(err, cancelled), true)
			return
		}
		c.reply(ic.req.ID, res, nil, true)
	}()
}

// endCall forgets a call that has finished or will not run, and reports whether the peer
// cancelled it and whether the connection has stopped.
func (c *Conn) endCall(ic *incomingCall) (cancelled, stopped bool) {
	c.mu.Lock()
	delete(c.inflight, ic.req.ID.key())
	cancelled, stopped = ic.f.cancelled, c.stopped
	c.mu.Unlock()
	ic.cancel()
	return cancelled, stopped
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

// reply queues the response to call id: result, or e when e is not nil. It does not wait for
// the write: the bound on queued bytes is what holds up a handler whose peer does not read,
// and the handler's place under MaxConcurrentCalls is freed once its reply is queued. With
// direct (a handler's goroutine), it writes the reply itself when nothing is queued or being
// written, and returns once it is written; the reader never does, so that it goes on reading
// while the peer is slow to read.
func (c *Conn) reply(id ID, result any, e *Error, direct bool) {
	how := sendReply
	if direct {
		how = sendDirect
	}
	_, _ = c.enqueue(context.Background(), how, 0, func() (*bytes.Buffer, error) {
		if e == nil {
			buf, err := encode(wireResult{JSONRPC: "2.0", ID: id, Result: result})
			if err == nil {
				return buf, nil
			}
			c.logf("jsonrpc2: encoding the result for call %s: %v", id, err)
			e = &Error{Code: CodeInternalError, Message: "encoding the result: " + err.Error()}
		}
		buf, err := encode(wireError{JSONRPC: "2.0", ID: id, Error: e})
		if err != nil {
			// Only Data can fail to encode; send the rest.
			c.logf("jsonrpc2: encoding the error for call %s: %v", id, err)
			return encode(wireError{JSONRPC: "2.0", ID: id, Error: &Error{Code: e.Code, Message: e.Message}})
		}
		return buf, nil
	})
}

func (c *Conn) replyError(id ID, e *Error) { c.reply(id, nil, e, false) }
