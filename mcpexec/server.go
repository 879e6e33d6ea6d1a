package mcpexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/jsonrpc2"
	"github.com/acpterm/acpterm/terminal"
)

// DefaultMaxSessions bounds the commands a server keeps running at once,
// as Codex bounds its unified exec sessions.
const DefaultMaxSessions = 64

// DefaultMaxMessageSize bounds one incoming message: tool arguments are
// small (cmd and chars are at most 1 MiB each).
const DefaultMaxMessageSize = 4 << 20

// DefaultDrainTimeout is Options.DrainTimeout's default: enough for the
// short commands of a file of requests piped in.
const DefaultDrainTimeout = 5 * time.Second

// DefaultSessionID is the terminal session the server's commands run in
// when Options.SessionID is empty.
const DefaultSessionID acp.SessionID = "mcp"

// Options configure a Server; nil means all defaults.
type Options struct {
	// Terminal configures the terminal.Manager the server makes for its
	// commands (its Policy: the sandbox, the roots, the limits). Nil
	// means defaults: no sandbox, which a host that serves untrusted
	// models should not want; acpterm mcp sets one.
	Terminal *terminal.Options
	// Runtime, if set, runs the commands instead: a runtime the server
	// shares with its host, on this machine (acpterm run's
	// *terminal.Manager, whose policy, prompts and display then apply
	// to them) or elsewhere (a *remote.Client: the commands run on its
	// target, in its sandbox). Terminal is ignored; Run does not close
	// it, and releases the server's session at its end.
	Runtime Runtime
	// SessionID is the terminal session of the server's commands on the
	// runtime; "" means DefaultSessionID. Servers sharing a Runtime need
	// one each.
	SessionID acp.SessionID
	// Cwd is where commands run when exec_command has no workdir, and
	// what a relative workdir is resolved against: a directory where the
	// commands run (the target's, for a remote Runtime). It must be
	// absolute; "" means Terminal.DefaultCwd, else the working directory.
	Cwd string
	// MaxSessions bounds the commands running at once (exec_command
	// answers with an error past it); 0 means DefaultMaxSessions.
	MaxSessions int
	// Name and Version are the serverInfo of initialize; "" means
	// "acpterm" and "devel".
	Name, Version string
	// Instructions, if set, are sent in initialize's result for the
	// host to show the model (a line about the sandbox, say).
	Instructions string
	// MaxMessageSize bounds one incoming message; 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// DrainTimeout is how long the calls read before the end of input
	// are still served and answered; 0 means DefaultDrainTimeout, a
	// negative value not at all. Every command is killed after it.
	DrainTimeout time.Duration
	// ToolCall, if set, is told of each exec_command once its terminal
	// exists: its arguments, and the agent's tool call it came from when
	// its tools/call named one in _meta (Claude Code's
	// MetaClaudeToolUseID, Codex's MetaCodexCallID). A hint for display
	// only (see ToolCallHint); a malformed ID is ignored. It is
	// called on the call's goroutine before the command's output is
	// read, and may block briefly.
	ToolCall func(h ToolCallHint)
	// Logf reports what has no caller to return it to; nil discards it.
	Logf func(format string, args ...any)
}

// Runtime is what a Server runs its commands on: a terminal runtime that
// takes input (write_stdin). A *terminal.Manager is one, and so is a
// *remote.Client, whose commands run on its target.
type Runtime interface {
	terminal.Runtime
	terminal.Input
}

var _ Runtime = (*terminal.Manager)(nil)

// Server serves the execution tools on one MCP connection (Run). Each
// command runs on a terminal.Manager of the server's own, which Run
// closes at its end (every command the client started is killed then),
// or on the Runtime it was given.
type Server struct {
	opts    Options
	cwd     string
	rt      Runtime
	ownMgr  *terminal.Manager // made by NewServer: closed at the end of Run
	sid     acp.SessionID
	maxSess int
	shell   string // runs login shell lines (exec_command's login without shell)

	conn  *jsonrpc2.Conn // set before ready is closed
	ready chan struct{}

	mu       sync.Mutex
	sessions map[int]*session
	nextID   int
	inflight map[string]context.CancelFunc // tools/call requests by ID
	early    []string                      // cancelled before they started, newest last
	closed   bool
	ran      bool
}

// NewServer returns a server configured by opts. It fails when the
// working directory cannot be known.
func NewServer(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var topts terminal.Options
	if o.Terminal != nil {
		topts = *o.Terminal
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = topts.DefaultCwd
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("mcpexec: no Cwd, and the working directory is unknown: %w", err)
		}
		cwd = wd
	}
	if !filepath.IsAbs(cwd) {
		return nil, fmt.Errorf("mcpexec: Cwd %q is not an absolute path", cwd)
	}
	maxSess := o.MaxSessions
	if maxSess <= 0 {
		maxSess = DefaultMaxSessions
	}
	rt := o.Runtime
	var own *terminal.Manager
	if rt == nil {
		own = terminal.NewManager(managerOptions(topts, cwd, maxSess))
		rt = own
	}
	sid := o.SessionID
	if sid == "" {
		sid = DefaultSessionID
	}
	if o.Name == "" {
		o.Name = "acpterm"
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	shell := topts.Shell
	switch _, local := rt.(*terminal.Manager); {
	case shell != "":
	case local:
		shell = terminal.DefaultShell()
	default:
		// Another machine's shells are not known here: sh is everywhere.
		shell = "/bin/sh"
	}
	return &Server{
		opts:     o,
		shell:    shell,
		cwd:      filepath.Clean(cwd),
		rt:       rt,
		ownMgr:   own,
		sid:      sid,
		maxSess:  maxSess,
		sessions: map[int]*session{},
		nextID:   1,
		inflight: map[string]context.CancelFunc{},
		ready:    make(chan struct{}),
	}, nil
}

// Run serves MCP on rw (newline-delimited JSON-RPC, MCP's stdio
// transport) until the client closes its end or ctx ends, then kills
// every command it started, closes rw and returns. A Server runs once.
func (s *Server) Run(ctx context.Context, rw io.ReadWriteCloser) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("mcpexec: Server.Run called twice")
	}
	s.ran = true
	s.mu.Unlock()
	s.conn = jsonrpc2.NewConn(rw, rw, jsonrpc2.HandlerFunc(s.handle), &jsonrpc2.Options{
		MaxMessageSize: s.opts.MaxMessageSize,
		Logf:           s.opts.Logf,
		// Requests piped in and the input closed (server < calls.jsonl)
		// are still answered, for a while; a host that quit reads no
		// answer, and the first failed write ends the wait.
		DrainTimeout: s.opts.DrainTimeout,
	})
	// Handlers may run before NewConn has returned: they wait for this
	// before they send anything of their own.
	close(s.ready)
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	s.shutdown()
	closeErr := s.conn.Close()
	err := s.conn.Wait()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && closeErr != nil && !errors.Is(closeErr, os.ErrClosed) {
		s.logf("mcpexec: closing the connection: %v", closeErr)
	}
	return err
}

// shutdownTimeout bounds the kill and release at shutdown; the runtime's
// own kill grace is shorter.
const shutdownTimeout = 30 * time.Second

// shutdown kills every command at once (the client is gone: nobody will
// read their output) and frees them.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.closed = true
	for _, c := range s.inflight {
		c()
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if s.ownMgr != nil {
		_ = s.ownMgr.KillAll(ctx)
		_ = s.ownMgr.Close()
		return
	}
	// A shared runtime: only this server's commands, with the kill grace.
	_ = s.rt.ReleaseSession(ctx, s.sid)
}

// managerOptions are the options of a manager of the server's own.
func managerOptions(topts terminal.Options, cwd string, maxSess int) *terminal.Options {
	topts.DefaultCwd = cwd
	// The manager's own bound must not be the tighter one: its refusal
	// would name terminals the model never heard of.
	var pol terminal.Policy
	if topts.Policy != nil {
		pol = *topts.Policy
	}
	pol.MaxTerminalsPerSession = max(pol.MaxTerminalsPerSession, maxSess)
	pol.MaxTerminals = max(pol.MaxTerminals, maxSess)
	topts.Policy = &pol
	return &topts
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// handle dispatches one request or notification.
func (s *Server) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case methodInitialize:
		var p initializeParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, invalidParams("initialize: %v", err)
		}
		return &initializeResult{
			ProtocolVersion: negotiate(p.ProtocolVersion),
			Capabilities:    serverCapabilities{Tools: &toolsCapability{}},
			ServerInfo:      implementation{Name: s.opts.Name, Version: s.opts.Version},
			Instructions:    s.opts.Instructions,
		}, nil
	case methodPing:
		return struct{}{}, nil
	case methodToolsList:
		return &listToolsResult{Tools: tools()}, nil
	case methodToolsCall:
		return s.callTool(ctx, req)
	case methodCancelled:
		s.cancelled(req.Params)
		return nil, nil
	case methodInitialized:
		return nil, nil
	}
	if !req.IsCall() {
		return nil, nil // notifications nobody here needs
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

// errCancelled answers a call that notifications/cancelled ended.
var errCancelled = &jsonrpc2.Error{Code: jsonrpc2.CodeRequestCancelled, Message: "request cancelled"}

func invalidParams(format string, args ...any) error {
	return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// callTool serves tools/call under a ctx that notifications/cancelled
// ends.
func (s *Server) callTool(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	var p callToolParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, invalidParams("tools/call: %v", err)
	}
	run, ok := toolRunners[p.Name]
	if !ok {
		return nil, invalidParams("unknown tool %q", p.Name)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !s.track(req.ID, cancel) {
		return nil, errCancelled
	}
	defer s.untrack(req.ID)
	c := &call{s: s, ctx: ctx}
	if p.Meta != nil && len(p.Meta.ProgressToken) > 0 && string(p.Meta.ProgressToken) != "null" {
		c.progressToken = p.Meta.ProgressToken
	}
	c.toolCall = toolCallHint(p.Meta)
	text, err := run(c, p.Arguments)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// MCP wants no answer to a cancelled request; the engine
			// answers every call, so it is the cancellation's error.
			return nil, errCancelled
		}
		return &callToolResult{Content: []textContent{{Type: "text", Text: err.Error()}}, IsError: true}, nil
	}
	return &callToolResult{Content: []textContent{{Type: "text", Text: text}}}, nil
}

// track records a running call's cancel func; false when the call was
// cancelled before it got here (or the server is closing).
func (s *Server) track(id jsonrpc2.ID, cancel context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := id.String()
	for i, k := range s.early {
		if k == key {
			s.early = append(s.early[:i], s.early[i+1:]...)
			return false
		}
	}
	if s.closed {
		return false
	}
	s.inflight[key] = cancel
	return true
}

func (s *Server) untrack(id jsonrpc2.ID) {
	s.mu.Lock()
	delete(s.inflight, id.String())
	s.mu.Unlock()
}

// maxEarly bounds the cancellations kept for calls not yet started.
const maxEarly = 64

// cancelled serves notifications/cancelled. Calls start in goroutines of
// their own, so a cancellation can be handled before the call it names
// has registered: it is then kept (a few) for the call to find.
func (s *Server) cancelled(params json.RawMessage) {
	var p cancelledParams
	if err := json.Unmarshal(params, &p); err != nil || len(p.RequestID) == 0 {
		s.logf("mcpexec: ignored %s without a usable requestId", methodCancelled)
		return
	}
	var id jsonrpc2.ID
	if err := id.UnmarshalJSON(p.RequestID); err != nil || !id.IsValid() {
		s.logf("mcpexec: ignored %s with requestId %s", methodCancelled, p.RequestID)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.inflight[id.String()]; c != nil {
		c()
		return
	}
	if len(s.early) >= maxEarly {
		s.early = s.early[1:]
	}
	s.early = append(s.early, id.String())
}
