// Package acp implements the Agent Client Protocol (ACP), protocol version 1
// and, negotiated per connection, version 2 (in Preview), for both of its
// sides.
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
//     A call whose ctx ends sends $/cancel_request and returns ctx's error;
//     ClientConn.Prompt does what ACP asks of a client instead: it sends
//     session/cancel and returns the agent's answer, within a bound
//     (ConnOptions.PromptCancelWait). On the agent's side, AgentConn
//     cancels the session's running Prompt on session/cancel (Cancel is
//     optional: SessionCanceller) and answers a cancelled turn
//     "cancelled". When the client ends the agent's input, the requests
//     it sent before are still answered (ConnOptions.DrainTimeout), so
//     `agent < requests.jsonl` works.
//   - Terminals, for agents: AgentConn.CreateTerminal returns a
//     TerminalHandle with Output, WaitForExit, Kill, Release and Close.
//     Package terminal is the client-side runtime that serves them,
//     package display runs a command as one tool call that shows its
//     terminal (display.RunCommand, or display.RunLocalCommand for an
//     agent's own runtime), and package workspace serves fs/* for a
//     client. A CreateTerminalRequest's Command is a shell line when Args is
//     empty (the client runs it with its shell, SHELL -c LINE) and a
//     program executed directly with exactly Args otherwise; send an argv
//     ("sh", "-c", LINE) to get a shell on every client.
//   - Typing into terminals, acpterm's extension (ACP has no input, resize
//     or pty): AgentConn.CreateTerminalWith asks terminal/create for a
//     pseudo-terminal or a stdin pipe (TerminalOptions, sent in _meta), and
//     the handle's Write, CloseStdin and Resize send the extension methods
//     MethodTerminalWrite, MethodTerminalCloseStdin and
//     MethodTerminalResize. They fail with ErrNoTerminalInput, before any
//     round trip, when the client did not advertise them in
//     clientCapabilities._meta (MetaTerminalPTY, MetaTerminalStdin,
//     MetaTerminalInput). A client serves them by implementing
//     TerminalInputHandler (package terminal: InputHandler), on v1 and v2
//     connections alike.
//
// Errors: handlers return plain errors; wrap a sentinel such as
// ErrInvalidParams with %w to choose the code the peer sees. WireError is the
// one mapping from a Go error to the wire: a wrapped *Error keeps its code,
// a cancelled request is -32800, undecodable params are -32602, anything else
// is -32603. Errors received from the peer are *PeerError values wrapping
// the peer's *Error (errors.As and errors.Is see its code; ErrorCode gives
// it). A handler that returns one as it is does not answer with the peer's
// code: WireError sends it as -32603 with the peer's error in data (an
// agent's session/prompt did not get invalid params because the client
// refused a terminal/create as such); wrap a sentinel in front of it to
// choose a code.
//
// # ACP v2 and the names of its types
//
// ACP v2 (in Preview; schema/v2/schema.json) is generated into
// types_v2_gen.go beside v1. One vocabulary across versions: a v2
// definition whose wire shape is the same as v1's (descriptions aside, and
// everything it refers to the same too) is the v1 Go type, not a copy:
// SessionID, ToolCallID, TerminalID, MessageID, Implementation,
// UsageUpdate, CloseSessionRequest, StopReason. A definition whose shape
// changed is a different fact and carries the prefix V2: V2PromptResponse
// (a message id, not a stop reason), V2ToolCallUpdate (it gained
// capabilities), V2InitializeRequest (capabilities and info). What v2
// adds is prefixed too (V2StateUpdate, V2BackgroundWork). The prefix, not
// a package of its own, keeps one import and lets the few hand-written
// helpers (V2IdleStateUpdate.StopError) sit beside the generated code;
// method names are one set of constants (MethodSessionPrompt serves both
// versions; MethodTerminalCancel is v2's). V2Methods is v2's method table.
//
// # Speaking v2
//
// Version negotiation is per connection. A ClientConn asks for 2 when
// ConnOptions.OfferV2 is set (v1 stays the default) and speaks whatever
// the agent answers, 1 or 2; an AgentConn serves whichever version the
// client asks for, unless the Agent's Initialize answers ProtocolVersion1
// to an offer of 2: v2 has no client terminals or files, so an agent that
// runs its commands in the client's terminals answers 1 when the offer's
// ClientCapabilities (what the client gives in v1) has them, and is
// served v1. Leaving ProtocolVersion unset, or answering the version
// asked for, serves both. ProtocolVersion on either connection says
// which was agreed. A v1-shaped
// request for 2, or an answer of 2 the client did not offer, fails
// initialize with an error that says so (ErrVersionNegotiation on the
// client).
//
// Go code written against the v1 types keeps working on a v2 connection;
// the SDK translates. On the client, Prompt returns the turn's stop reason
// when the idle state update ends the turn (session/prompt only
// acknowledges in v2), and the Client's v1 handlers hear v2 updates in
// v1's words. What v2 adds is there for a client that wants it: View(sid)
// is the session as the agent's upserts left it (tool calls, terminals,
// messages, the state and its background work); a Client implementing
// V2UpdateHandler gets every update as it is, after it has been applied
// to the view, which makes the state, terminal and tool call updates the
// events of a jobs list (a Client that keeps its v1 handlers implements
// V2StateHandler instead, for the state updates alone); CancelTerminal and CancelToolCall stop background
// work that advertises capabilities.cancel. On the agent, AgentConn
// acknowledges the prompt, runs the Agent's Prompt and sends its end as
// the idle state update; it lists background work on every state update
// and, for terminals and tool calls registered with CancellableTerminal
// and CancellableToolCall, advertises capabilities.cancel and serves
// terminal/cancel and tool_call/cancel. ExampleClientConn_v2 shows both
// sides.
//
// # A complete agent and client
//
// An agent implements Agent (and AgentConnSetter to call the client from
// its handlers); a client implements Client. This program runs both over
// in-memory pipes; it is the package's Example (agentAndClient), so it
// compiles and runs as shown:
//
//	type myAgent struct{ conn *acp.AgentConn }
//
//	// SetConn is called before the first message: handlers may use a.conn.
//	func (a *myAgent) SetConn(c *acp.AgentConn) { a.conn = c }
//
//	func (a *myAgent) Initialize(ctx context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
//		return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
//	}
//
//	func (a *myAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
//		return &acp.NewSessionResponse{SessionID: "s1"}, nil
//	}
//
//	// Prompt runs a turn. A long one watches ctx: AgentConn cancels it on the
//	// client's session/cancel and answers the turn "cancelled".
//	func (a *myAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
//		err := a.conn.SessionUpdate(ctx, &acp.SessionNotification{
//			SessionID: req.SessionID,
//			Update:    &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "hello from the agent"}},
//		})
//		return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
//	}
//
//	type myClient struct{}
//
//	func (myClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
//		if m, ok := n.Update.(*acp.AgentMessageChunk); ok {
//			if t, ok := m.Content.(*acp.TextContent); ok {
//				fmt.Println("agent:", t.Text)
//			}
//		}
//		return nil
//	}
//
//	func (myClient) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
//		return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
//	}
//
//	// runPair runs both sides in one process, over pipes. An agent process
//	// serves its stdio with acp.ServeAgent(ctx, &myAgent{}, os.Stdin,
//	// os.Stdout, nil); a client starts one with acp.StartAgent(cmd, myClient{}, nil).
//	func runPair(ctx context.Context) error {
//		toAgentR, toAgentW := io.Pipe()
//		toClientR, toClientW := io.Pipe()
//		served := make(chan error, 1)
//		go func() { served <- acp.ServeAgent(ctx, &myAgent{}, toAgentR, toClientW, nil) }()
//
//		conn := acp.NewClientConn(myClient{}, toClientR, toAgentW, nil)
//		if _, err := conn.Initialize(ctx, nil); err != nil {
//			return err
//		}
//		sess, err := conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: "/"})
//		if err != nil {
//			return err
//		}
//		resp, err := conn.Prompt(ctx, &acp.PromptRequest{
//			SessionID: sess.SessionID,
//			Prompt:    []acp.ContentBlock{&acp.TextContent{Text: "hi"}},
//		})
//		if err != nil {
//			return err
//		}
//		fmt.Println("stop reason:", resp.StopReason)
//		// Closing the client ends the agent's input: ServeAgent returns nil.
//		return errors.Join(conn.Close(), <-served)
//	}
package acp
