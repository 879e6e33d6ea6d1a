package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/jsonrpc2"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// ServerOptions configure Serve. A nil *ServerOptions or zero fields mean
// the defaults.
type ServerOptions struct {
	// Terminal configures the runtime that runs the commands: policy
	// (sandbox, roots, bounds), environment, shell, kill grace. nil means
	// terminal's defaults. An empty DefaultCwd means the server's working
	// directory, else the user's home. Decide, when set, runs on the
	// target; usually the client decides before it asks.
	Terminal *terminal.Options
	// Version is reported in the hello.
	Version string
	// MaxMessageSize bounds one message from the client; 0 means
	// DefaultServerMaxMessage. The client sends requests only, so a
	// small bound costs nothing and keeps a hostile client from making
	// the server hold large lines.
	MaxMessageSize int
	// StallTimeout is how long the client may leave the server's output
	// unread while the server has something to write; past it the
	// connection ends, and with it every command (the dead-man rule).
	// 0 means jsonrpc2's default (30 s).
	StallTimeout time.Duration
	// Logf reports problems that have no caller; nil discards them.
	Logf func(format string, args ...any)
}

// DefaultServerMaxMessage is the default bound on one incoming message:
// a terminal/create with a large environment fits many times over.
const DefaultServerMaxMessage = 4 << 20

// ShutdownBound is how long Serve may take, at most, to end every command
// and return once the connection has ended (for commands that ignore
// SIGKILL's cousins in uninterruptible sleep, the kernel decides).
const ShutdownBound = 2 * time.Second

// Serve runs the exec server on rw: the terminal runtime, served as
// JSON-RPC 2.0, one message per line, until rw's input ends, ctx is done
// or the client stops reading (StallTimeout). Then, by the dead-man rule,
// it kills every command it started, with all their descendants, at once
// (SIGKILL, no grace: nobody is left to ask for their output), removes
// what it made, and returns. The end of input is the normal end and
// returns nil.
//
// Everything the client sends is treated as hostile: messages, concurrent
// calls and queued bytes are bounded (jsonrpc2), terminals by the
// policy's MaxTerminals, and the output streams never hold up a command:
// a stream that falls behind drops output and says so by its offsets.
func Serve(ctx context.Context, rw io.ReadWriteCloser, opts *ServerOptions) error {
	if opts == nil {
		opts = &ServerOptions{}
	}
	s := newServer(opts)
	maxMsg := opts.MaxMessageSize
	if maxMsg <= 0 {
		maxMsg = DefaultServerMaxMessage
	}
	conn := jsonrpc2.NewConn(rw, rw, s, &jsonrpc2.Options{
		MaxMessageSize: maxMsg,
		StallTimeout:   opts.StallTimeout,
		ToWireError:    toWireError,
		Logf:           opts.Logf,
	})
	s.conn = conn
	close(s.ready)
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	s.shutdown()
	closeErr := conn.Close()
	err := conn.Wait()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && closeErr != nil && !errors.Is(closeErr, os.ErrClosed) {
		s.logf("remote: closing the connection: %v", closeErr)
	}
	return err
}

// server is one connection's runtime.
type server struct {
	opts  *ServerOptions
	mgr   *terminal.Manager
	hello HelloResponse
	conn  *jsonrpc2.Conn // set once, before ready is closed
	ready chan struct{}

	ctx    context.Context // of the streams; cancelled at shutdown
	cancel context.CancelFunc

	attach   atomic.Bool // the client takes output as attachments (its hello)
	askHosts atomic.Bool // the client answers MethodAskHost (its hello)
	denials  atomic.Bool // the client takes NotifyNetworkDenied (its hello)

	mu      sync.Mutex
	streams map[string]*stream // by terminal key
	closed  bool
	wg      sync.WaitGroup // the pumps
}

func newServer(opts *ServerOptions) *server {
	var topts terminal.Options
	if opts.Terminal != nil {
		topts = *opts.Terminal
	}
	if topts.DefaultCwd == "" {
		topts.DefaultCwd = defaultCwd()
	}
	s := &server{opts: opts, streams: map[string]*stream{}, ready: make(chan struct{})}
	asking := s.askThroughClient(&topts)
	s.mgr = terminal.NewManager(&topts)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.hello = HelloResponse{
		ProtocolVersion: ProtocolVersion,
		Version:         opts.Version,
		OS:              runtime.GOOS,
		Arch:            runtime.GOARCH,
		DefaultCwd:      topts.DefaultCwd,
		Isolation:       s.mgr.Isolation().String(),
		MaxTerminals:    maxTerminals(topts.Policy),
		Sandbox:         sandboxInfo(topts.Policy, topts.DefaultCwd),
		Input:           true,
		PTY:             runtime.GOOS == "linux",
		AskHosts:        asking,
	}
	if topts.Policy != nil {
		s.hello.Roots = append([]string(nil), topts.Policy.Roots...)
	}
	return s
}

// defaultCwd is the server's working directory (where ssh, podman exec
// and kubectl exec start it), else the home directory, else "/".
func defaultCwd() string {
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

func maxTerminals(p *terminal.Policy) int {
	if p == nil {
		return terminal.DefaultMaxTerminals
	}
	switch {
	case p.MaxTerminals != 0:
		return p.MaxTerminals
	case p.MaxTerminalsPerSession < 0:
		return -1
	}
	return max(terminal.DefaultMaxTerminals, p.MaxTerminalsPerSession)
}

// sandboxInfo reports the policy and what the kernel makes of it, by
// planning it (Wrap starts nothing) for a command in cwd.
func sandboxInfo(p *terminal.Policy, cwd string) SandboxInfo {
	rep := sandbox.Support()
	info := SandboxInfo{
		Mode: sandbox.Off.String(), Network: sandbox.AllowNetwork.String(),
		LandlockABI: rep.LandlockABI, Namespaces: rep.Namespaces,
		NamespacesErr: rep.NamespacesErr, Root: rep.Root,
	}
	if p == nil || p.Sandbox == nil {
		return info
	}
	sp := *p.Sandbox
	info.Mode, info.Network = sp.Mode.String(), sp.Network.String()
	if sp.Mode == sandbox.Off && sp.Network == sandbox.AllowNetwork {
		return info
	}
	if sp.Mode == sandbox.WorkspaceWrite && len(sp.Writable) == 0 && len(sp.Caches) == 0 && sp.CacheDir == "" {
		roots := p.Roots
		if len(roots) == 0 {
			roots = []string{cwd}
		}
		sp.Writable, sp.CacheDir = roots, sandbox.DefaultCacheDir()
		if sp.Protected == nil {
			sp.Protected = sandbox.DefaultProtected(roots...)
		}
	}
	if sp.Mode != sandbox.Off && sp.Hidden == nil {
		home, _ := os.UserHomeDir()
		sandbox.DefaultSecrets(home).Apply(&sp)
	}
	a, err := sp.Wrap(newPlanCmd())
	if err != nil {
		info.Error = err.Error()
		return info
	}
	info.Missing = a.Missing
	info.LeftOut, info.GitSearchCut = a.LeftOut, a.GitSearchCut
	info.Hidden, info.Shown, info.Redacted = a.Hidden, a.Shown, a.Redacted
	info.HiddenByLandlock = a.HiddenByLandlock
	_ = a.Cleanup()
	return info
}

func (s *server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// method serves one call: params in, result out.
type method func(s *server, ctx context.Context, params json.RawMessage) (any, error)

// methods is the server's method table. A method is one line: its name
// and a function of its param type (the fs methods' are in fs.go).
var methods = map[string]method{
	MethodHello:          call((*server).helloCall),
	MethodPing:           call(func(*server, context.Context, *struct{}) (any, error) { return struct{}{}, nil }),
	MethodSetSessionCwd:  call((*server).setSessionCwd),
	MethodReleaseSession: call((*server).releaseSession),
	MethodSubscribe:      call((*server).subscribe),
	MethodCreate:         call((*server).createHeld),
	MethodKillAll: call(func(s *server, ctx context.Context, _ *struct{}) (any, error) {
		return struct{}{}, s.mgr.KillAll(ctx)
	}),
	methodCreate: call((*server).create),
	methodOutput: call(func(s *server, ctx context.Context, r *acp.TerminalOutputRequest) (any, error) {
		return s.mgr.TerminalOutput(ctx, r)
	}),
	methodWait: call(func(s *server, ctx context.Context, r *acp.WaitForTerminalExitRequest) (any, error) {
		return s.mgr.WaitForTerminalExit(ctx, r)
	}),
	methodKill: call(func(s *server, ctx context.Context, r *acp.KillTerminalRequest) (any, error) {
		return s.mgr.KillTerminal(ctx, r)
	}),
	MethodWrite:         call((*server).write),
	MethodCloseStdin:    call((*server).closeStdin),
	MethodResize:        call((*server).resize),
	methodRelease:       call((*server).release),
	methodReadTextFile:  call((*server).readTextFile),
	methodWriteTextFile: call((*server).writeTextFile),
}

// call adapts a typed method to the table: it decodes the params (absent
// params are an error, as for every method here) and calls fn.
func call[Req any](fn func(*server, context.Context, *Req) (any, error)) method {
	return func(s *server, ctx context.Context, params json.RawMessage) (any, error) {
		if params == nil {
			return nil, fmt.Errorf("%w: params are required", acp.ErrInvalidParams)
		}
		req := new(Req)
		if err := json.Unmarshal(params, req); err != nil {
			return nil, fmt.Errorf("%w: %v", acp.ErrInvalidParams, err)
		}
		return fn(s, ctx, req)
	}
}

// Handle serves the client's calls and its grants; other notifications
// have no meaning here and are ignored.
func (s *server) Handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	if !req.IsCall() {
		if req.Method == NotifyGrant {
			s.grant(req.Params)
		}
		return nil, nil
	}
	m := methods[req.Method]
	if m == nil {
		return nil, fmt.Errorf("%w: %s", acp.ErrMethodNotFound, req.Method)
	}
	return m(s, ctx, req.Params)
}

func (s *server) helloCall(_ context.Context, req *HelloRequest) (any, error) {
	if req.ProtocolVersion != ProtocolVersion {
		return nil, fmt.Errorf("%w: protocol version %d is not this server's (%d): the acpterm on the target is of another release",
			acp.ErrInvalidParams, req.ProtocolVersion, ProtocolVersion)
	}
	s.attach.Store(req.Attachments)
	s.askHosts.Store(req.AskHosts)
	s.denials.Store(req.Denials)
	hello := s.hello
	hello.Attachments = req.Attachments
	return &hello, nil
}

func (s *server) setSessionCwd(_ context.Context, req *SetSessionCwdRequest) (any, error) {
	if err := s.mgr.SetSessionCwd(context.Background(), req.SessionID, req.Cwd); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (s *server) releaseSession(ctx context.Context, req *ReleaseSessionRequest) (any, error) {
	_ = s.mgr.ReleaseSession(ctx, req.SessionID)
	s.mu.Lock()
	for _, st := range s.streams {
		if st.sid == req.SessionID {
			st.markReleased()
		}
	}
	s.mu.Unlock()
	return struct{}{}, nil
}

// release releases a terminal; its stream then waits for the client no
// more (a lossless one skips what the client has no room for).
func (s *server) release(ctx context.Context, req *acp.ReleaseTerminalRequest) (any, error) {
	resp, err := s.mgr.ReleaseTerminal(ctx, req)
	if err != nil {
		return nil, err
	}
	if st := s.stream(req.SessionID, req.TerminalID); st != nil {
		st.markReleased()
	}
	return resp, nil
}

func (s *server) stream(sid acp.SessionID, tid acp.TerminalID) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[string(sid)+"\x00"+string(tid)]
}

// grant is a client's grant for a lossless stream. A malformed one, or
// one for a stream that is gone, is ignored: the client only holds up
// its own terminals by getting it wrong.
func (s *server) grant(params json.RawMessage) {
	var g GrantNotification
	if json.Unmarshal(params, &g) != nil {
		return
	}
	if st := s.stream(g.SessionID, g.TerminalID); st != nil {
		st.grantTo(g.Taken)
	}
}

func (s *server) create(ctx context.Context, req *acp.CreateTerminalRequest) (any, error) {
	resp, err := s.mgr.CreateTerminal(ctx, req)
	if err != nil {
		return nil, err
	}
	// Subscribing right after the create replays the retained output, so
	// the stream misses nothing the command wrote in between unless that
	// was more than its outputByteLimit (then the first chunk's Offset
	// says so).
	if err := s.startStream(req.SessionID, resp.TerminalID, 0, 0, "", nil); err != nil && !errors.Is(err, terminal.ErrNotFound) {
		return nil, err
	}
	return resp, nil
}

// createHeld is create with a held (lossless) stream, whose held
// subscription is made before the command's output is first read.
func (s *server) createHeld(ctx context.Context, req *CreateRequest) (any, error) {
	if len(req.Tag) > maxTag {
		return nil, fmt.Errorf("%w: tag longer than %d bytes", acp.ErrInvalidParams, maxTag)
	}
	if req.Window == 0 {
		resp, err := s.mgr.CreateTerminal(ctx, &req.Terminal)
		if err != nil {
			return nil, err
		}
		if err := s.startStream(req.Terminal.SessionID, resp.TerminalID, 0, 0, req.Tag, nil); err != nil && !errors.Is(err, terminal.ErrNotFound) {
			return nil, err
		}
		return resp, nil
	}
	resp, sub, err := s.mgr.CreateTerminalHeld(ctx, &req.Terminal)
	if err != nil {
		return nil, err
	}
	if err := s.startStream(req.Terminal.SessionID, resp.TerminalID, 0, req.Window, req.Tag, sub); err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *server) subscribe(_ context.Context, req *SubscribeRequest) (any, error) {
	if err := s.startStream(req.SessionID, req.TerminalID, req.After, req.Window, "", nil); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// toWireError is acp's mapping, with the terminal kind in data so that
// the client's error still matches terminal.ErrNotFound and the others.
func toWireError(err error) *jsonrpc2.Error {
	e := acp.WireError(err)
	out := &jsonrpc2.Error{Code: e.Code, Message: e.Message, Data: e.Data}
	if kind := kindName(err); kind != "" && out.Data == nil {
		d := errorData{Kind: kind, StdinClosed: errors.Is(err, terminal.ErrStdinClosed)}
		var we *writeErr
		if errors.As(err, &we) {
			d.Written = we.n
		}
		out.Data, _ = json.Marshal(d)
	}
	return out
}

// kinds names terminal's error kinds on the wire.
var kinds = []struct {
	name string
	err  error
}{
	{"notFound", terminal.ErrNotFound},
	{"invalid", terminal.ErrInvalid},
	{"denied", terminal.ErrDenied},
	{"closed", terminal.ErrClosed},
}

func kindName(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

func kindErr(name string) error {
	for _, k := range kinds {
		if k.name == name {
			return k.err
		}
	}
	return nil
}

// shutdown is the dead-man rule: every command dies at once, those whose
// release is waiting out its kill grace included, then the manager's
// teardown sweeps what is left (cgroup, process groups, the marker scan),
// the streams end and are joined.
func (s *server) shutdown() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	_ = s.mgr.KillAll(context.Background())
	_ = s.mgr.Close()
	s.cancel()
	s.wg.Wait()
}
