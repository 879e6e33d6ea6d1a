// Package jsonrpc2 is the JSON-RPC 2.0 engine under package acp: newline-delimited framing,
// dispatch, ordering and cancellation over any io.Reader/io.Writer pair (an agent's stdio).
//
// A Conn has one reader goroutine. Incoming calls run concurrently, one goroutine each.
// Notifications are handled one at a time, in arrival order, by a single goroutine, and a
// response is handed to its caller only after every notification that arrived before it has
// been handled: an ACP client sees all of a turn's session/update notifications before the
// session/prompt result. "$/cancel_request" is handled by the reader itself, ahead of the queue.
//
// Outgoing messages are written by one writer goroutine, in the order they were sent. A Call or
// Notify waits for its message to be written, or for its ctx: a peer that stops reading blocks
// the writer, never a caller whose ctx has ended.
//
// Usage:
//
//	conn := jsonrpc2.NewConn(stdout, stdin, handler, nil)
//	defer conn.Close()
//	var res InitializeResponse
//	err := conn.Call(ctx, "initialize", &InitializeRequest{ProtocolVersion: 1}, &res)
package jsonrpc2
