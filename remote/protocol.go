package remote

import (
	"github.com/acpterm/acpterm/acp"
)

// ProtocolVersion is the version of the exec server's protocol that this
// package speaks. A server answers a hello of another version with an
// error, so that a client and a server of different releases fail at
// once instead of mid-session.
const ProtocolVersion = 2

// The methods of the protocol. ACP's own terminal methods keep their names
// and their param and result types; the others are the exec server's.
const (
	// MethodHello is the first call: HelloRequest → HelloResponse.
	MethodHello = "remote/hello"
	// MethodSetSessionCwd: SetSessionCwdRequest → struct{}; the directory
	// of a session's terminals when a create has none
	// (terminal.Manager.SetSessionCwd).
	MethodSetSessionCwd = "remote/set_session_cwd"
	// MethodReleaseSession: ReleaseSessionRequest → struct{}; releases
	// every terminal of a session (terminal.Manager.ReleaseSession).
	MethodReleaseSession = "remote/release_session"
	// MethodSubscribe: SubscribeRequest → struct{}; restarts the output
	// stream of one terminal after a cursor (see SubscribeRequest).
	MethodSubscribe = "remote/subscribe"
	// MethodPing: struct{} → struct{}; the client's keep-alive.
	MethodPing = "remote/ping"
	// MethodCreate: CreateRequest → acp.CreateTerminalResponse;
	// terminal/create with a lossless output stream.
	MethodCreate = "remote/create"
	// MethodKillAll: struct{} → struct{}; SIGKILLs every command the
	// server runs at once, without the kill grace
	// (terminal.Manager.KillAll); the terminals stay until released.
	MethodKillAll = "remote/kill_all"
	// MethodWrite: WriteRequest → WriteResponse; writes to a terminal's
	// stdin or pty (terminal.Input.Write). Served when the hello says
	// Input.
	MethodWrite = "remote/write"
	// MethodCloseStdin: TerminalRequest → struct{}; ends a terminal's
	// input (terminal.Input.CloseStdin). Served when the hello says Input.
	MethodCloseStdin = "remote/close_stdin"
	// MethodResize: ResizeRequest → struct{}; resizes a pty terminal
	// (terminal.Input.Resize). Served when the hello says Input.
	MethodResize = "remote/resize"
	// MethodAskHost is the one call the server makes: AskHostRequest →
	// AskHostResponse, to a client whose hello set AskHosts, when a
	// command's connection goes to a host that is not on the target's
	// list (its exec server's --allow-host). The connection waits for the
	// answer, within netproxy's bound of a question.
	MethodAskHost = "remote/ask_host"

	methodCreate  = "terminal/create"
	methodOutput  = "terminal/output"
	methodWait    = "terminal/wait_for_exit"
	methodKill    = "terminal/kill"
	methodRelease = "terminal/release"
)

// The notifications the server sends, one stream per terminal, in this
// order: started, output…, exit, released.
const (
	// NotifyStarted carries a StartedNotification.
	NotifyStarted = "remote/terminal_started"
	// NotifyOutput carries an OutputNotification.
	NotifyOutput = "remote/output"
	// NotifyExit carries an ExitNotification.
	NotifyExit = "remote/exit"
	// NotifyReleased carries a ReleasedNotification.
	NotifyReleased = "remote/released"
)

// NotifyNetworkDenied carries a netproxy.Denial: a connection of a
// command that the target's proxy refused. Sent, outside any terminal's
// stream, only to a client whose hello set Denials.
const NotifyNetworkDenied = "remote/network_denied"

// NotifyGrant is the one notification the client sends: a
// GrantNotification, which lets a lossless stream go on.
const NotifyGrant = "remote/grant"

// HelloRequest opens the exchange.
type HelloRequest struct {
	ProtocolVersion int `json:"protocolVersion"`
	// Client names the client for the server's logs, e.g. "acpterm 0.4".
	Client string `json:"client,omitempty"`
	// Attachments: the client takes output as raw bytes attached to
	// its notification (see OutputNotification) rather than in JSON.
	Attachments bool `json:"attachments,omitempty"`
	// AskHosts: the client answers MethodAskHost. Without it the server
	// refuses a host that is not on its list at once.
	AskHosts bool `json:"askHosts,omitempty"`
	// Denials: the client takes NotifyNetworkDenied.
	Denials bool `json:"denials,omitempty"`
}

// HelloResponse says what the server is and what it can enforce.
type HelloResponse struct {
	ProtocolVersion int `json:"protocolVersion"`
	// Version is the server program's version ("" when not set).
	Version string `json:"version,omitempty"`
	// OS and Arch are the target's runtime.GOOS and runtime.GOARCH.
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// DefaultCwd is where a terminal runs when neither its create nor its
	// session gives a cwd: the directory the target was named with, else
	// the server's working directory (the user's home over ssh, the
	// container's workdir in podman, docker and kubectl exec).
	DefaultCwd string `json:"defaultCwd"`
	// Roots are the directories a terminal's cwd must lie in; empty when
	// any cwd is allowed.
	Roots []string `json:"roots,omitempty"`
	// Isolation is the target's no-orphans mechanism (terminal.Isolation):
	// "cgroup", "procscan" or "group".
	Isolation string `json:"isolation"`
	// MaxTerminals bounds the live terminals of the connection; negative
	// means no bound.
	MaxTerminals int `json:"maxTerminals"`
	// Sandbox is what the server confines its commands with.
	Sandbox SandboxInfo `json:"sandbox"`
	// Attachments: the server sends output attached, as the client
	// asked.
	Attachments bool `json:"attachments,omitempty"`
	// Input: the server serves MethodWrite, MethodCloseStdin and
	// MethodResize, and gives a terminal/create a stdin pipe when its
	// _meta asks for one (terminal.MetaStdin). An exec server of an
	// earlier release leaves it out: the client then refuses input
	// itself, with an error wrapping terminal.ErrInvalid.
	Input bool `json:"input,omitempty"`
	// PTY: a terminal/create whose _meta asks for a pseudo-terminal
	// (terminal.MetaPTY) gets one there (a Linux target).
	PTY bool `json:"pty,omitempty"`
	// AskHosts: the server's commands reach the network through a proxy
	// with a list of hosts, and it puts the others to a client that
	// answers MethodAskHost.
	AskHosts bool `json:"askHosts,omitempty"`
}

// AskHostRequest is a question about one connection to a host that is not
// on the target's list: the host and port the command asked the proxy
// for, through which protocol ("http", "connect", "socks5"), and the
// command as the target's runtime names it (terminal.SplitProxyClient),
// "" when it did not name itself. All of it comes from the target: a
// client shows it escaped.
type AskHostRequest struct {
	Protocol string `json:"protocol"`
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
	Client   string `json:"client,omitempty"`
}

// AskHostResponse is the answer: "allow_once" lets that connection
// through, "allow_session" that host and port for the rest of the
// connection; anything else refuses it.
type AskHostResponse struct {
	Decision string `json:"decision"`
}

// The decisions of an AskHostResponse.
const (
	DecisionAllowOnce    = "allow_once"
	DecisionAllowSession = "allow_session"
	DecisionDeny         = "deny"
)

// SandboxInfo is the server's sandbox and what the target's kernel makes
// of it.
type SandboxInfo struct {
	// Mode ("off", "read-only", "workspace-write") and Network ("allow",
	// "deny") are the policy the server was started with.
	Mode    string `json:"mode"`
	Network string `json:"network"`
	// LandlockABI, Namespaces and Root describe the target's kernel and
	// user, as sandbox.Support reports them.
	LandlockABI   int    `json:"landlockAbi"`
	Namespaces    bool   `json:"namespaces"`
	NamespacesErr string `json:"namespacesError,omitempty"`
	Root          bool   `json:"root"`
	// Missing lists what the target cannot enforce of the policy and does
	// without (as acpterm run does where there are no user namespaces).
	Missing []string `json:"missing,omitempty"`
	// LeftOut names the caches the target leaves out of the writable
	// paths, and why (sandbox.Applied.LeftOut); GitSearchCut, that its
	// search for repositories in the caches was cut short.
	LeftOut      []string `json:"leftOut,omitempty"`
	GitSearchCut bool     `json:"gitSearchCut,omitempty"`
	// Hidden, Shown and Redacted are the target's paths the commands may
	// not read, those shown through them, and those they see without
	// their credential lines (sandbox.Applied's); fs/* keeps out of the
	// first and the last as well.
	Hidden   []string `json:"hidden,omitempty"`
	Shown    []string `json:"shown,omitempty"`
	Redacted []string `json:"redacted,omitempty"`
	// HiddenByLandlock: the target has no mount namespace, and Landlock
	// hides Hidden there instead (sandbox.Applied's).
	HiddenByLandlock bool `json:"hiddenByLandlock,omitempty"`
	// Error, when set, says why the policy cannot be enforced there at
	// all: every terminal/create is then refused (permission denied), never
	// run with less confinement than asked for.
	Error string `json:"error,omitempty"`
}

// SetSessionCwdRequest sets a session's cwd on the target.
type SetSessionCwdRequest struct {
	SessionID acp.SessionID `json:"sessionId"`
	// Cwd is absolute on the target; "" forgets it.
	Cwd string `json:"cwd"`
}

// ReleaseSessionRequest releases a session's terminals on the target.
type ReleaseSessionRequest struct {
	SessionID acp.SessionID `json:"sessionId"`
}

// SubscribeRequest restarts a terminal's output stream: the server
// replays the output it still retains (the terminal's tail, at most its
// outputByteLimit) from byte offset After on, then streams on as before.
// A client asks for it when the stream skipped output (an OutputNotification
// whose Offset is past the end of the one before: the server's stream fell
// behind a slow transport and dropped bytes), or when it attaches late.
type SubscribeRequest struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	After      uint64         `json:"after"`
	// Window, when positive, makes the restarted stream lossless, as
	// CreateRequest.Window does, from the replay on.
	Window uint64 `json:"window,omitempty"`
}

// CreateRequest is terminal/create with a lossless stream: the server
// never drops the terminal's output but holds the command instead, as a
// pipe to a slow reader would, and sends output only as far as the
// client has room for. The client may be sent the bytes up to offset
// taken+Window, where taken is the offset up to which its subscribers
// have taken the output (GrantNotification; the stream's first offset
// until the first grant). The server holds at most its subscriber
// buffer and the chunk being sent (and, once the command has exited,
// what its pipe still held, see terminal.SubscribeHeld); the client at
// most Window bytes per lossless subscriber.
type CreateRequest struct {
	Terminal acp.CreateTerminalRequest `json:"terminal"`
	// Window is in bytes; 0 means a stream like terminal/create's.
	Window uint64 `json:"window"`
	// Tag, when set, is sent back in the terminal's StartedNotification,
	// which may reach the client before the create's answer: it tells
	// the client which of its creates a new terminal is (at most 64
	// bytes).
	Tag string `json:"tag,omitempty"`
}

// maxTag bounds CreateRequest.Tag.
const maxTag = 64

// GrantNotification tells the server how far the client's subscribers
// have taken a lossless stream: every byte before offset Taken. Grants
// only ever move forward; a smaller Taken than one sent before is
// ignored, as is a grant for a stream that is not lossless.
type GrantNotification struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Taken      uint64         `json:"taken"`
}

// StartedNotification is the first message of a terminal's stream.
type StartedNotification struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Seq        uint64         `json:"seq"`
	// Argv is what runs on the target, Cwd where.
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
	// PID is the command's process ID on the target.
	PID int `json:"pid"`
	// OutputByteLimit is the limit in force (the request's, clamped).
	OutputByteLimit uint64 `json:"outputByteLimit"`
	// Window is the stream's window when it is lossless (CreateRequest),
	// else 0.
	Window uint64 `json:"window,omitempty"`
	// Tag is the create's CreateRequest.Tag.
	Tag string `json:"tag,omitempty"`
	// PTY is the size of the pseudo-terminal the command runs on; nil
	// for pipes.
	PTY *Size `json:"pty,omitempty"`
	// Stdin: the command's stdin is a pipe that MethodWrite writes.
	Stdin bool `json:"stdin,omitempty"`
}

// Size is a pty terminal's size on the wire (terminal.Size).
type Size struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// TerminalRequest names one terminal.
type TerminalRequest struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
}

// WriteRequest is input for a terminal: at most terminal.MaxStdinWrite
// bytes, base64 in JSON.
type WriteRequest struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Data       []byte         `json:"data"`
}

// WriteResponse says how much of the data went in: all of it, since a
// write cut short answers with an error (whose data says how much went
// in, see errorData).
type WriteResponse struct {
	N int `json:"n"`
}

// ResizeRequest resizes a pty terminal; a zero field keeps its size.
type ResizeRequest struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Size
}

// OutputNotification is a chunk of a terminal's output: stdout and stderr
// merged, raw bytes. On the wire Data is one of three things. For a
// client that asked for attachments (HelloRequest), the raw bytes
// attached to the message, which then has neither member below: no
// encoding, no escaping, nothing for either side to scan (the framing is
// internal/jsonrpc2's: a line "\x01" and the size, the bytes, the
// message's line). Otherwise one of two members: "text", a JSON string,
// for bytes that are valid UTF-8 and that escaping does not make longer
// than base64 would (most terminal output), else "data", base64 (binary
// output, invalid UTF-8, text full of control bytes).
type OutputNotification struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	// Seq numbers the messages of one terminal's stream from 1, across
	// resubscriptions, so that a client can tell their order.
	Seq uint64 `json:"seq"`
	// Offset is the position of Data's first byte in everything the
	// command wrote. Bytes between the end of the previous chunk and
	// Offset were dropped by the server's stream (see SubscribeRequest).
	Offset uint64 `json:"offset"`
	Data   []byte `json:"data"`
}

// ExitNotification says that the command exited and its output was
// drained: every output chunk of the terminal came before it.
type ExitNotification struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Seq        uint64         `json:"seq"`
	// Total is how many bytes the command wrote in all.
	Total uint64 `json:"total"`
	// ExitStatus is how the command ended, as terminal/output says it.
	ExitStatus acp.TerminalExitStatus `json:"exitStatus"`
	// TimedOut: the server's timeout killed the command
	// (terminal.Event.TimedOut).
	TimedOut bool `json:"timedOut,omitempty"`
}

// ReleasedNotification ends a terminal's stream: the terminal was
// released (by the client, or by the server's shutdown).
type ReleasedNotification struct {
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Seq        uint64         `json:"seq"`
}

// errorData is the data of an error answer for a terminal failure, so
// that the client can give back an error of the same terminal kind.
type errorData struct {
	Kind string `json:"kind"`
	// StdinClosed: the error wraps terminal.ErrStdinClosed.
	StdinClosed bool `json:"stdinClosed,omitempty"`
	// Written is what a failed write put in before it failed.
	Written int `json:"written,omitempty"`
}
