// Package acp implements the Agent Client Protocol (ACP), protocol version 1,
// for both of its sides.
//
// ACP is how code editors and command-line clients talk to coding agents:
// JSON-RPC 2.0 over the agent's stdin and stdout, one JSON message per line.
// The client launches the agent, calls its methods (initialize, session/new,
// session/prompt, ...) and serves the methods the agent calls back
// (session/request_permission, fs/*, terminal/*), while the agent streams
// session/update notifications describing its turn.
//
// The package has three layers:
//
//   - Types for every definition of the pinned schema (schema/v1/schema.json),
//     generated into types_gen.go with the schema's descriptions as their
//     docs. Optional fields are pointers or omitted empties, so absent, null
//     and zero survive a round trip; a required array is sent as [] when it
//     is nil, so a NewSessionRequest without MCPServers is valid. Unions such
//     as ContentBlock, SessionUpdate and ToolCallContent are sealed interfaces
//     whose unknown variants decode into Unknown... values instead of failing.
//     Methods and MethodByName describe each protocol method: which Side
//     serves it and the Go types of its params and result.
//   - Connections. A client uses ClientConn (StartAgent launches an agent
//     process and connects to it) and implements Client, plus any of the
//     optional interfaces TerminalHandler, FileReader, FileWriter, Elicitor,
//     ExtHandler; the capabilities it advertises follow from which it
//     implements. An agent uses AgentConn and implements Agent, plus optional
//     interfaces such as SessionLoader. Every protocol method is a Go method
//     shaped Method(ctx, *Request) (*Response, error). Incoming requests run
//     concurrently, notifications in order, and every notification sent
//     before a response is handled before that response reaches its caller.
//     A call whose ctx ends sends $/cancel_request and returns ctx's error.
//   - Terminals, for agents: AgentConn.CreateTerminal returns a
//     TerminalHandle with Output, WaitForExit, Kill, Release and Close.
//     Package terminal is the client-side runtime that serves them.
//
// Errors: handlers return plain errors; wrap a sentinel such as
// ErrInvalidParams with %w to choose the code the peer sees. WireError is the
// one mapping from a Go error to the wire: a wrapped *Error keeps its code,
// a cancelled request is -32800, undecodable params are -32602, anything else
// is -32603. Errors received from the peer are *Error values.
package acp
