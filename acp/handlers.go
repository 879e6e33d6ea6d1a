package acp

import (
	"context"
	"encoding/json"
)

// Client is what a Go ACP client implements to serve the methods every agent
// may call. Optional interfaces (TerminalHandler, FileReader, FileWriter,
// Elicitor, ExtHandler) add more; ClientConn.Initialize advertises exactly the
// capabilities whose interfaces the Client implements.
type Client interface {
	// RequestPermission answers session/request_permission.
	RequestPermission(ctx context.Context, req *RequestPermissionRequest) (*RequestPermissionResponse, error)
	// SessionUpdate handles a session/update notification. Updates arrive in
	// order, and all updates sent before a response are handled before that
	// response reaches its caller.
	SessionUpdate(ctx context.Context, n *SessionNotification) error
}

// TerminalHandler serves the five terminal methods. A Client that implements
// it advertises clientCapabilities.terminal. Package terminal provides a
// complete implementation (terminal.Manager).
type TerminalHandler interface {
	CreateTerminal(ctx context.Context, req *CreateTerminalRequest) (*CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, req *TerminalOutputRequest) (*TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, req *WaitForTerminalExitRequest) (*WaitForTerminalExitResponse, error)
	KillTerminal(ctx context.Context, req *KillTerminalRequest) (*KillTerminalResponse, error)
	ReleaseTerminal(ctx context.Context, req *ReleaseTerminalRequest) (*ReleaseTerminalResponse, error)
}

// FileReader serves fs/read_text_file and advertises fs.readTextFile.
type FileReader interface {
	ReadTextFile(ctx context.Context, req *ReadTextFileRequest) (*ReadTextFileResponse, error)
}

// FileWriter serves fs/write_text_file and advertises fs.writeTextFile.
type FileWriter interface {
	WriteTextFile(ctx context.Context, req *WriteTextFileRequest) (*WriteTextFileResponse, error)
}

// Elicitor serves elicitation/create and elicitation/complete. Which modes it
// supports is up to the caller of Initialize to advertise.
type Elicitor interface {
	CreateElicitation(ctx context.Context, req *CreateElicitationRequest) (*CreateElicitationResponse, error)
	CompleteElicitation(ctx context.Context, n *CompleteElicitationNotification) error
}

// Agent is what a Go ACP agent implements to serve the baseline methods.
// Optional interfaces add the rest; AgentConn fills the capabilities of the
// initialize result from the interfaces the Agent implements.
//
// session/cancel needs no method: AgentConn cancels the ctx of the
// session's running Prompt itself (see AgentConn), so a Prompt that stops
// when its ctx ends is all cancellation takes. SessionCanceller is for an
// agent that has more to do on a cancel.
type Agent interface {
	Initialize(ctx context.Context, req *InitializeRequest) (*InitializeResponse, error)
	NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error)
	// Prompt runs one turn. Its ctx ends when the client cancels the turn
	// (session/cancel, session/close and, with
	// ConnOptions.SupersedePrompts, a newer session/prompt for the
	// session: context.Cause tells which), when the request is cancelled
	// with $/cancel_request, and when the connection ends. A turn the
	// client ended is answered with StopReasonCancelled even if Prompt
	// returns an error.
	Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error)
}

// SessionCanceller is implemented by an Agent that wants to hear of
// session/cancel beyond the cancelled ctx of the session's Prompt, which
// AgentConn cancels first: work running outside Prompt, say. Cancel is
// called for every session/cancel, whether a turn was running or not.
type SessionCanceller interface {
	Cancel(ctx context.Context, n *CancelNotification) error
}

// Authenticator serves authenticate.
type Authenticator interface {
	Authenticate(ctx context.Context, req *AuthenticateRequest) (*AuthenticateResponse, error)
}

// LogoutHandler serves logout and advertises agentCapabilities.auth.logout.
type LogoutHandler interface {
	Logout(ctx context.Context, req *LogoutRequest) (*LogoutResponse, error)
}

// SessionLoader serves session/load and advertises loadSession.
type SessionLoader interface {
	LoadSession(ctx context.Context, req *LoadSessionRequest) (*LoadSessionResponse, error)
}

// SessionResumer serves session/resume and advertises sessionCapabilities.resume.
type SessionResumer interface {
	ResumeSession(ctx context.Context, req *ResumeSessionRequest) (*ResumeSessionResponse, error)
}

// SessionLister serves session/list and advertises sessionCapabilities.list.
type SessionLister interface {
	ListSessions(ctx context.Context, req *ListSessionsRequest) (*ListSessionsResponse, error)
}

// SessionCloser serves session/close and advertises sessionCapabilities.close.
// AgentConn cancels the session's running Prompt before it calls
// CloseSession, as the protocol asks.
type SessionCloser interface {
	CloseSession(ctx context.Context, req *CloseSessionRequest) (*CloseSessionResponse, error)
}

// SessionDeleter serves session/delete and advertises sessionCapabilities.delete.
type SessionDeleter interface {
	DeleteSession(ctx context.Context, req *DeleteSessionRequest) (*DeleteSessionResponse, error)
}

// ModeSetter serves session/set_mode.
type ModeSetter interface {
	SetSessionMode(ctx context.Context, req *SetSessionModeRequest) (*SetSessionModeResponse, error)
}

// ConfigOptionSetter serves session/set_config_option.
type ConfigOptionSetter interface {
	SetSessionConfigOption(ctx context.Context, req *SetSessionConfigOptionRequest) (*SetSessionConfigOptionResponse, error)
}

// ExtHandler serves extension methods and notifications, whose names start
// with "_". The method name is passed whole, leading underscore included.
// Without an ExtHandler, extension requests get -32601 and extension
// notifications are ignored, as the protocol asks.
type ExtHandler interface {
	ExtMethod(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	ExtNotification(ctx context.Context, method string, params json.RawMessage) error
}

// AgentConnSetter is implemented by an Agent that calls the client from its
// handlers (session/update, permission requests, terminals). NewAgentConn,
// and so ServeAgent, calls SetConn with the new connection before it serves
// the first message, so a handler can use the connection it stored without
// further synchronization.
type AgentConnSetter interface {
	SetConn(*AgentConn)
}

// ClientConnSetter is implemented by a Client that calls the agent from its
// handlers. NewClientConn and StartAgent call SetConn with the new
// connection before it serves the first message.
type ClientConnSetter interface {
	SetConn(*ClientConn)
}
