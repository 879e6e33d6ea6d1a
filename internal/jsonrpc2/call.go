package jsonrpc2

// The outgoing side: calls and notifications to the peer, and the responses the reader
// hands back to the calls waiting for them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// Call sends a request and waits for its response. result is a pointer to decode the result into,
// or nil. An error response is returned as *Error. When ctx is done first, Call returns ctx.Err():
// if the request was still waiting to be written it is never sent, otherwise $/cancel_request
// follows it and a response arriving later is dropped. So a peer that stops reading cannot hold
// a Call beyond its ctx. Once input has ended or Close was called, or after a failed write, it
// returns an error wrapping ErrClosed (and ErrPeerStalled when that is what ended it).
//
// A handler's Call with its own ctx gives up the handler's place under MaxConcurrentCalls
// until the response arrives, so calls waiting on the peer never keep the reader from
// reading that peer's responses.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.CallQueued(ctx, method, params, result, nil)
}

// CallQueued is Call, and calls queued, if not nil, once the request is queued to be
// written: a message sent after that is written after the request. ACP's session/cancel
// must not overtake the session/prompt it cancels.
func (c *Conn) CallQueued(ctx context.Context, method string, params, result any, queued func()) error {
	return c.CallOrdered(ctx, method, params, result, queued, nil)
}

// CallOrdered is CallQueued, and calls delivered, if not nil, with the result when a
// successful response is handed over: after every notification read before the response has
// been handled and before any read after it is, in the goroutine that handles them. It must not
// block, nor keep the result. ACP v2's session/prompt
// answer only acknowledges the prompt, and a client telling the state updates of its turn from
// earlier ones needs to know where the answer fell among them.
func (c *Conn) CallOrdered(ctx context.Context, method string, params, result any, queued func(), delivered func(result json.RawMessage)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := c.nextID.Add(1)
	p := &pendingCall{ch: make(chan response, 1), direct: ctx.Value(notifyCtxKey{}) == c, delivered: delivered}
	c.mu.Lock()
	if c.stopped || c.inputEnded {
		c.mu.Unlock()
		return c.closedErr()
	}
	c.pending[n] = p
	c.mu.Unlock()
	if s := c.slotOf(ctx); s != nil {
		c.suspend(s)
		defer c.resume(s)
	}
	if p.direct {
		c.notifyCallStarted()
		defer c.notifyCallEnded()
	}
	m, err := c.enqueue(ctx, sendCall, n, func() (*bytes.Buffer, error) {
		buf, err := encode(wireRequest{JSONRPC: "2.0", ID: Int64ID(n), Method: method, Params: params})
		if err != nil {
			return nil, fmt.Errorf("jsonrpc2: encoding %s params: %w", method, err)
		}
		return buf, nil
	})
	if err != nil {
		c.forget(n) // never sent
		return err
	}
	if queued != nil {
		queued()
	}
	// A failed write comes as the response: waiting for the write as well
	// would cost a goroutine switch per call.
	select {
	case r := <-p.ch:
		if r.err != nil {
			return r.err
		}
		if result != nil {
			if err := unmarshalValid(r.result, result); err != nil {
				return fmt.Errorf("jsonrpc2: decoding %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		// Unless it was never written, the peer is told to stop.
		if c.forget(n) && !m.state.CompareAndSwap(outQueued, outDropped) {
			c.queueCancel(n)
		}
		return ctx.Err()
	}
}

// Notify sends a notification and returns once it is written. When ctx is done first it returns
// ctx.Err(), and the notification is not sent if it was still waiting to be written. Once input
// has ended (and the drain, if any: a draining handler may still notify) or Close was called, or
// after a failed write, it returns an error wrapping ErrClosed.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	return c.notify(ctx, func() (*bytes.Buffer, error) {
		buf, err := encode(wireRequest{JSONRPC: "2.0", Method: method, Params: params})
		if err != nil {
			return nil, fmt.Errorf("jsonrpc2: encoding %s params: %w", method, err)
		}
		return buf, nil
	})
}

// notify sends the notification build makes, as Notify says.
func (c *Conn) notify(ctx context.Context, build func() (*bytes.Buffer, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.isStopped() {
		return c.closedErr()
	}
	if s := c.slotOf(ctx); s != nil {
		// Waiting for the peer to read, like waiting for its response in Call.
		c.suspend(s)
		defer c.resume(s)
	}
	_, err := c.send(ctx, build)
	return err
}

// NotifyAppend is Notify for params that the caller encodes itself: appendParams appends them,
// one JSON value, to the message being built, which is sent as it is. Notify's params go
// through encoding/json, which scans a Marshaler's output again to check and compact it; a
// caller that sends many large notifications of one shape (a stream of output) saves that
// scan and a copy. It is the caller's to append valid JSON with no newline in it.
//
// attachment, when not nil, is sent with the message as raw bytes (Options.Attachments): as a
// line of "\x01" and the attachment's size in decimal, the attachment, then the message's
// line. Send one only to a peer that takes them: to any other, the size line is a malformed
// line and the attachment's bytes are lines like any other.
func (c *Conn) NotifyAppend(ctx context.Context, method string, appendParams func([]byte) []byte, attachment []byte) error {
	return c.notify(ctx, func() (*bytes.Buffer, error) {
		name, err := json.Marshal(method)
		if err != nil {
			return nil, fmt.Errorf("jsonrpc2: encoding method %q: %w", method, err)
		}
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		if attachment != nil {
			writeAttachment(buf, attachment)
		}
		buf.WriteString(`{"jsonrpc":"2.0","method":`)
		buf.Write(name)
		buf.WriteString(`,"params":`)
		buf.Write(appendParams(buf.AvailableBuffer()))
		buf.WriteString("}\n")
		return buf, nil
	})
}

// route hands a response to its caller, after the notifications that arrived before it.
// cost is what it counts against MaxQueuedBytes while queued.
func (c *Conn) route(d decoded, cost int64) {
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
			c.queue = append(c.queue, queued{resp: resp, respID: n, size: cost})
			c.qBytes += cost
			c.qmu.Unlock()
			c.signal()
			return
		}
		c.qmu.Unlock()
	}
	c.deliver(n, *resp)
}

// isPending reports whether id names a call of ours still waiting.
func (c *Conn) isPending(id ID) bool {
	n, err := strconv.ParseInt(id.raw, 10, 64)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[n] != nil
}

func (c *Conn) deliver(n int64, r response) {
	c.mu.Lock()
	p := c.pending[n]
	delete(c.pending, n)
	c.mu.Unlock()
	if p == nil {
		// Ids are issued in order from 1, so an id up to the last one issued belongs to a call
		// whose caller stopped waiting (its ctx ended, or the write failed): the peer answering
		// it anyway is what $/cancel_request asks for, not a fault worth a log line. An id we
		// never issued is the peer's mistake.
		if (n < 1 || n > c.nextID.Load()) && !c.closing.Load() {
			c.logf("jsonrpc2: dropped a response for call %d, which this connection never made", n)
		}
		return
	}
	if p.delivered != nil && r.err == nil {
		p.delivered(r.result)
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
	err := c.closedErr()
	c.mu.Lock()
	ps := c.pending
	c.pending = make(map[int64]*pendingCall)
	c.mu.Unlock()
	for _, p := range ps {
		p.ch <- response{err: err}
	}
}
