// Package jsonrpc2 is the JSON-RPC 2.0 engine under package acp: newline-delimited framing,
// dispatch, ordering, flow control and cancellation over any io.Reader/io.Writer pair (an
// agent's stdio).
//
// # Ordering
//
// A Conn has one reader goroutine. Notifications are handled one at a time, in arrival order,
// by a single goroutine. An incoming call is started, in a goroutine of its own, only after
// every notification that arrived before it has been handled, and a response is handed to its
// caller under the same rule: an ACP client sees all of a turn's session/update notifications
// before the session/request_permission that follows them, and before the session/prompt
// result. Once started, calls run concurrently with each other and with later notifications.
// "$/cancel_request" is handled by the reader itself, ahead of the queue. A notification
// handler that makes a Call with its own ctx is exempt: the response to that Call, and calls
// arriving while it waits, are not held behind it (see Conn).
//
// # Flow control
//
// The peer is untrusted, so everything it can make us hold is bounded (see Options): the
// size of one message, the call handlers running at once (MaxConcurrentCalls), and the bytes
// waiting in the incoming queue and in the outgoing queue (MaxQueuedBytes). At a bound the
// reader stops reading, which pushes back on the peer through its pipe, and senders wait
// before encoding. A peer that stops reading our output while we have something to write is
// a protocol failure: after StallTimeout the connection ends with an error wrapping
// ErrPeerStalled. An incoming message costs about its size once framed (a long line is
// gathered in blocks and joined once; params point into the line, not into a copy).
//
// Outgoing messages are written in the order they were sent, by one writer goroutine; a
// handler's reply is written by the handler's own goroutine when nothing is queued ahead of
// it, which saves waking the writer. A Call or Notify waits for its message to be written (a
// Call, for its response), or for its ctx: a peer that stops reading blocks the writer, never
// a caller whose ctx has ended. After a write has failed nothing more is written, sends fail
// at once, and calls still read from the peer are not handled: no answer could reach it.
//
// # End of input
//
// The end of the peer's output is not the end of the connection's work: with
// Options.DrainTimeout, the calls read before it are still run and answered (queued ones
// started, running ones keep their ctx), as x/tools' jsonrpc2_v2 does, so `server <
// requests.jsonl` answers every request; Done closes once the last answer is written, or
// at the drain's bound or a failed write. Calls of ours fail at once, as no response can
// arrive. Without DrainTimeout the handlers' contexts are cancelled at once and nothing
// more is answered.
//
// Usage:
//
//	conn := jsonrpc2.NewConn(stdout, stdin, handler, nil)
//	defer conn.Close()
//	var res InitializeResponse
//	err := conn.Call(ctx, "initialize", &InitializeRequest{ProtocolVersion: 1}, &res)
package jsonrpc2
