package jsonrpc2

// How a connection ends: Close, a failed write or the end of input, and what callers
// waiting on it are told.

import (
	"errors"
	"io"
)

// Close ends the connection: it closes r and w when they are io.Closers, cancels the contexts of
// handlers in flight, fails pending Calls with ErrClosed, and returns once every goroutine the Conn
// started has returned. So a handler that ignores its ctx delays Close, and a handler must not
// call Close itself. If r is not an io.Closer, or closing it does not interrupt a blocked Read (a
// blocking file descriptor such as a terminal), Close also waits for that Read to return.
// Close returns what went wrong on the way out: closing r or w failed, or a write failed before
// Close was called, so that the messages behind it never reached the peer. How the connection
// ended is Wait's to say. Close is idempotent; every call returns the result of the first.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		c.cancel()
		c.failPending()
		c.closeReader()
		c.closeWriter()
		c.wg.Wait()
		// The writer has returned (wg), so lostErr is settled.
		c.closeErr = errors.Join(c.lostErr, c.rErr, c.wErr)
	})
	return c.closeErr
}

// closeReader and closeWriter close r and w once, whether Close or a failure does it first.
func (c *Conn) closeReader() {
	if rc, ok := c.r.(io.Closer); ok {
		c.rOnce.Do(func() { c.rErr = rc.Close() })
	}
}

func (c *Conn) closeWriter() {
	if wc, ok := c.w.(io.Closer); ok && !SameStream(c.r, c.w) {
		c.wOnce.Do(func() { c.wErr = wc.Close() })
	}
}

// fail ends the connection because of err, seen from inside (a stalled peer): like the end of
// input, and r and w are closed so that a blocked Read or Write returns. Wait then returns err.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.failure == nil {
		c.failure = err
	}
	c.stopped = true
	c.mu.Unlock()
	c.logf("%v; closing the connection", err)
	c.cancel()
	c.failPending()
	c.closeReader()
	c.closeWriter()
}

// closedErr is the error for a call on a connection that has ended.
func (c *Conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure != nil {
		return closedError{c.failure}
	}
	return ErrClosed
}

// closedError is ErrClosed with the failure that closed the connection, whose text says it all.
type closedError struct{ cause error }

func (e closedError) Error() string { return e.cause.Error() + "; connection closed" }

func (e closedError) Unwrap() []error { return []error{ErrClosed, e.cause} }

// Done is closed when the connection has ended: the end of input (after the drain, with
// Options.DrainTimeout, and once the drain's replies are written), a read error, a stalled
// peer, or Close.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Wait waits for the reader to stop and for every goroutine the Conn started to return, and
// returns the error that ended the connection: nil for end of input or Close, an error
// wrapping ErrPeerStalled for a peer that stopped reading, else the read error.
func (c *Conn) Wait() error {
	<-c.done
	c.wg.Wait()
	return c.readErr
}

// badMessage logs an unusable incoming line and tells OnBadMessage.
func (c *Conn) badMessage(verb, reason string) {
	c.logf("jsonrpc2: %s an incoming message: %s", verb, reason)
	if c.onBad != nil {
		c.onBad(reason)
	}
}

func (c *Conn) logf(format string, args ...any) {
	if c.logfFunc != nil {
		c.logfFunc(format, args...)
	}
}

func (c *Conn) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}
