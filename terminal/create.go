package terminal

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/pathutil"
	"github.com/acpterm/acpterm/sandbox"
)

// Create starts a terminal (terminal/create) and returns once the command
// has started. ctx bounds the request (including Policy.Decide), not the
// command, which runs until it exits or is killed or released.
func (m *Manager) Create(ctx context.Context, req Request) (Info, error) {
	info, _, err := m.createHeld(ctx, req, false)
	return info, err
}

// createHeld is Create and, with held, CreateHeld.
func (m *Manager) createHeld(ctx context.Context, req Request, held bool) (Info, *Subscription, error) {
	pl, err := m.resolve(req)
	if err != nil {
		return Info{}, nil, err
	}
	epoch, err := m.reserve(req.SessionID)
	if err != nil {
		return Info{}, nil, err
	}
	t, sub, err := m.create(ctx, pl, epoch, held)
	m.unreserve(req.SessionID, err != nil && t == nil)
	if errors.Is(err, errSessionReleased) {
		m.releasedMeanwhile(req.SessionID)
	}
	if err != nil {
		return Info{}, nil, err
	}
	return t.info, sub, nil
}

// plan is a validated request: what would run, where, and with what
// environment (the marker aside).
type plan struct {
	info Info
	path string // executable
	env  []string
}

// resolve validates req and works out what would run, and where.
func (m *Manager) resolve(req Request) (plan, error) {
	if err := validate(req); err != nil {
		return plan{}, err
	}
	cwd, err := m.resolveCwd(req.SessionID, req.Cwd)
	if err != nil {
		return plan{}, err
	}
	limit := m.cfg.ceiling
	if req.OutputByteLimit != nil && *req.OutputByteLimit < limit {
		limit = *req.OutputByteLimit
	}
	info := Info{
		SessionID:       req.SessionID,
		Command:         req.Command,
		Args:            append([]string(nil), req.Args...),
		Env:             append([]EnvVar(nil), req.Env...),
		Cwd:             cwd,
		Shell:           len(req.Args) == 0,
		Stdin:           req.Stdin,
		PTY:             ptySize(req.PTY),
		OutputByteLimit: limit,
	}
	if info.Shell {
		info.Argv = shellCommand(m.cfg.shell, req.Command)
	} else {
		info.Argv = append([]string{req.Command}, req.Args...)
	}
	base := m.cfg.env
	if !m.cfg.envSet {
		base = os.Environ()
	}
	pl := plan{info: info, env: withTERM(info, buildEnv(base, info.Env))}
	// Look the executable up now, so that Policy.Decide sees it and a
	// missing one fails before anybody is asked.
	if err := pl.lookExecutable(); err != nil {
		return plan{}, err
	}
	return pl, nil
}

// validate checks what a request says on its own, before anything is
// looked up.
func validate(req Request) error {
	if req.SessionID == "" {
		return invalidf("sessionId is empty")
	}
	if req.Command == "" {
		return invalidf("command is empty")
	}
	// A NUL cannot reach exec or the file system (both take C strings):
	// left in, it fails later as a host error instead of a bad request.
	if strings.ContainsRune(req.Command, 0) {
		return invalidf("command contains NUL")
	}
	for i, a := range req.Args {
		if strings.ContainsRune(a, 0) {
			return invalidf("args[%d] contains NUL", i)
		}
	}
	if strings.ContainsRune(req.Cwd, 0) {
		return invalidf("cwd contains NUL")
	}
	if execTooLarge(req) {
		return invalidf("command, args and env take more than the %d bytes any system can exec", maxExecSize)
	}
	if err := validatePTY(req.PTY); err != nil {
		return err
	}
	return validateEnv(req.Env)
}

// maxExecSize bounds what a request's command, args and env may take as
// exec counts it (each string with its NUL and its pointer). Linux caps
// argv and envp together at 3/4 of _STK_LIM (6 MiB) whatever the stack
// limit, macOS at 1 MiB, Windows a command line at 32767 characters: a
// larger request can never start. Refusing it up front spares copying a
// list of millions of strings several times over on the way to a fork
// that fails with E2BIG, and asking Policy.Decide (the user) about it.
// Env entries count as the request writes them, duplicate names too.
const maxExecSize = 8 << 20

// execTooLarge reports whether req's command, args and env take more
// than maxExecSize as exec counts them. It stops counting there, so that
// the sum cannot overflow.
func execTooLarge(req Request) bool {
	const ptr = 8
	n := len(req.Command) + 1 + ptr
	for _, a := range req.Args {
		if n += len(a) + 1 + ptr; n > maxExecSize {
			return true
		}
	}
	for _, v := range req.Env {
		if n += len(v.Name) + 1 + len(v.Value) + 1 + ptr; n > maxExecSize {
			return true
		}
	}
	return n > maxExecSize
}

// lookExecutable sets pl.path to the executable that runs: the shell as
// configured when it is an absolute path, else looked up in the command's
// PATH and cwd; an exec'd command's Argv[0] becomes that path too.
func (pl *plan) lookExecutable() error {
	pl.path = pl.info.Argv[0]
	if !pl.info.Shell || !filepath.IsAbs(pl.path) {
		p, err := lookPath(pl.path, pl.info.Cwd, pl.env)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return invalidErr(err, "command %q not found", pl.path)
			}
			return invalidErr(err, "command %q: %v", pl.path, err)
		}
		pl.path = p
	}
	if !pl.info.Shell {
		pl.info.Argv[0] = pl.path
	}
	return nil
}

func (m *Manager) resolveCwd(sessionID acp.SessionID, cwd string) (string, error) {
	if cwd != "" {
		if !filepath.IsAbs(cwd) {
			return "", invalidf("cwd %q is not an absolute path", cwd)
		}
	} else {
		m.mu.Lock()
		if s := m.sessions[sessionID]; s != nil {
			cwd = s.cwd
		}
		m.mu.Unlock()
		if cwd == "" {
			cwd = m.cfg.defaultCwd
		}
		if cwd == "" {
			return "", invalidf("no cwd given and session %q has no default cwd", sessionID)
		}
	}
	cwd = filepath.Clean(cwd)
	fi, err := os.Stat(cwd)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", invalidErr(err, "cwd %q does not exist", cwd)
		}
		return "", invalidErr(err, "cwd %q: %v", cwd, err)
	}
	if !fi.IsDir() {
		return "", invalidf("cwd %q is not a directory", cwd)
	}
	if len(m.cfg.roots) == 0 {
		return cwd, nil
	}
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return "", invalidErr(err, "cwd %q: %v", cwd, err)
	}
	for _, root := range m.cfg.roots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if pathutil.Within(real, r) {
			return real, nil
		}
	}
	return "", deniedf("cwd %q is outside the workspace", cwd)
}

// reserve counts a create in progress against the session's limit and
// the manager's, and returns the session's epoch.
func (m *Manager) reserve(sessionID acp.SessionID) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errClosed()
	}
	if limit := m.cfg.maxTotal; limit > 0 && m.live >= limit {
		return 0, deniedf("%d terminals are live, the limit of all sessions together; release some first", limit)
	}
	s := m.sessionLocked(sessionID)
	if limit := m.cfg.maxPerSess; limit > 0 && s.live >= limit {
		return 0, deniedf("session %q already has %d live terminals, the limit; release some first", sessionID, limit)
	}
	s.live++
	m.live++
	m.creating++
	return s.epoch, nil
}

// releasedSince reports whether ReleaseSession has ended the session
// since epoch. The session cannot have been forgotten meanwhile: the
// create's reservation keeps it.
func (m *Manager) releasedSince(sessionID acp.SessionID, epoch uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionID]
	return s == nil || s.epoch != epoch
}

// unreserve ends a create; a failed one gives its slot back.
func (m *Manager) unreserve(sessionID acp.SessionID, failed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.creating--
	m.idle.Broadcast()
	if failed {
		m.live--
	}
	if s := m.sessions[sessionID]; s != nil && failed {
		s.live--
		m.gcSessionLocked(sessionID, s)
	}
}

// create asks the policy, starts the command and registers the terminal.
//
// A session released while the create waited (in Policy.Decide, most
// likely) gets no terminal: its command would outlive the session, kept
// only by the manager's Close.
//
// With held, the terminal comes with a held subscription to it, made
// before its output is first read; a terminal released in between is
// returned with the error, being counted out by its release.
func (m *Manager) create(ctx context.Context, pl plan, epoch uint64, held bool) (*term, *Subscription, error) {
	if err := m.decide(ctx, pl.info); err != nil {
		return nil, nil, err
	}
	if m.releasedSince(pl.info.SessionID, epoch) {
		return nil, nil, sessionReleased(pl.info.SessionID)
	}
	pl.info.TerminalID = m.freshID(pl.info.SessionID)
	t, err := m.start(pl)
	if err != nil {
		return nil, nil, err
	}
	err = m.register(t, epoch)
	var sub *Subscription
	var subErr error
	if err == nil && held {
		sub, subErr = m.subscribeTo(t, true)
	}
	t.run()
	if err != nil {
		m.teardown([]*term{t}, false)
		return nil, nil, err
	}
	if subErr != nil {
		// Released as soon as registered (ReleaseSession): the release
		// tears it down, and counts it out (t is returned for that).
		return t, nil, sessionReleased(pl.info.SessionID)
	}
	return t, sub, nil
}

// decide asks Policy.Decide, if set, whether the command may run. Decide
// gets its own copies of the slices, which it may keep.
func (m *Manager) decide(ctx context.Context, info Info) error {
	if m.cfg.decide == nil {
		return nil
	}
	info.Args = slices.Clone(info.Args)
	info.Env = slices.Clone(info.Env)
	info.Argv = slices.Clone(info.Argv)
	d := m.cfg.decide(ctx, info)
	if err := ctx.Err(); err != nil {
		return err
	}
	if !d.Allow {
		reason := d.Reason
		if reason == "" {
			reason = "denied by policy"
		}
		return deniedf("%s", reason)
	}
	return nil
}

// freshID picks a terminal ID that the session does not use.
func (m *Manager) freshID(sessionID acp.SessionID) acp.TerminalID {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessionLocked(sessionID)
	id := newTerminalID()
	for s.terms[id] != nil {
		id = newTerminalID()
	}
	return id
}

// start starts the command of pl, whose terminal ID is set, writing into
// a new output pipe, and returns its terminal, not yet registered.
func (m *Manager) start(pl plan) (*term, error) {
	info := pl.info
	if info.PTY != nil {
		return m.startPTY(pl)
	}
	marker := string(info.TerminalID) + "." + m.nonce
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, internalErr(err, "creating output pipe: %v", err)
	}
	childIn, in, err := openStdin(info.Stdin)
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	spec := m.spawnSpecFor(pl, marker)
	spec.stdin, spec.stdout = childIn, pw
	// The child has its copy of pw: EOF comes when the last holder exits.
	p, err := m.spawn(spec, &info, pr, in, childIn, pw)
	if err != nil {
		return nil, err
	}
	limit := min(info.OutputByteLimit, math.MaxInt)
	return &term{
		m:          m,
		info:       info,
		key:        termKey(info.SessionID, info.TerminalID),
		proc:       p,
		pr:         pr,
		tmp:        spec.tmp,
		in:         in,
		out:        newTail(int(limit)),
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}, nil
}

// register adds t to its session and announces it, under t's lock so
// that a Subscribe to it sees Created exactly once: replayed or
// published. It fails when the manager was closed, or the session
// released, since the create reserved its place in epoch: t is then left
// for Close to wait for, unannounced, and the caller tears it down.
func (m *Manager) register(t *term, epoch uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	m.mu.Lock()
	var err error
	switch s := m.sessions[t.info.SessionID]; {
	case m.closed:
		err = errClosed()
	case s == nil || s.epoch != epoch:
		err = sessionReleased(t.info.SessionID)
	default:
		s.terms[t.info.TerminalID] = t
	}
	open := err == nil
	if !open {
		m.releasing[t.key] = t // Close waits for it
	}
	m.mu.Unlock()
	if open {
		ci := t.info
		t.publishLocked(Event{Kind: EventCreated, Info: &ci})
	}
	return err
}

// sandboxFor is the sandbox policy of one command, with its Writable
// paths; nil when commands are not sandboxed. Its private TMPDIR is made
// at start (spawnSpec.tmp, or by the spawner).
func (m *Manager) sandboxFor(info Info) *sandbox.Policy {
	if m.cfg.sandbox == nil {
		return nil
	}
	sp := *m.cfg.sandbox
	if sp.Mode == sandbox.WorkspaceWrite && len(sp.Writable) == 0 {
		// No roots: the workspace is where the command runs.
		sp.Writable = []string{info.Cwd}
		if len(sp.Caches) == 0 && sp.CacheDir == "" {
			sp.CacheDir = sandbox.DefaultCacheDir()
		}
		if sp.Protected == nil {
			sp.Protected = sandbox.DefaultProtected(info.Cwd)
		}
	}
	sp.ProxyClient = ProxyClient(info)
	return &sp
}

// removeTemp removes a terminal's private TMPDIR with what the command
// left in it.
func (m *Manager) removeTemp(dir string) {
	if dir == "" {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		m.cfg.logf("terminal: removing %s: %v", dir, err)
	}
}

// spawn starts spec's command for the terminal info describes, then
// closes the ends only the child needs (childSide). If the start fails it
// also releases what the terminal would have kept (ours, its input) and
// what spec made for the command, and returns the error as the agent
// sees it; else it fills in info's PID, sandbox and start time.
func (m *Manager) spawn(spec *spawnSpec, info *Info, ours io.Closer, in *stdinPipe, childSide ...io.Closer) (*proc, error) {
	p, err := m.iso.start(spec)
	for _, c := range childSide {
		c.Close()
	}
	if err != nil {
		ours.Close()
		in.close()
		m.removeTemp(spec.tmp)
		_ = spec.applied.Cleanup()
		return nil, startErr(*info, err)
	}
	info.PID = p.pid()
	info.Sandbox = spec.applied
	info.Started = time.Now()
	return p, nil
}

// startErr maps a failed start to the error create returns. A sandbox
// the kernel cannot provide is ErrDenied, like a refusal by Decide: the
// request is sound and the host healthy, but the host's policy does not
// let the command run unconfined, and asking again will not change that
// (a host failure would suggest a passing one). A host program that does
// not call sandbox.Init is the host's bug: a host failure.
func startErr(info Info, err error) error {
	var se *sandboxError
	if errors.As(err, &se) {
		if errors.Is(err, sandbox.ErrUnsupported) {
			return deniedErr(err, "%q cannot run in the sandbox the host requires: %v", info.Argv[0], err)
		}
		return internalErr(err, "sandboxing %q: %v", info.Argv[0], err)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT, syscall.EACCES, syscall.ENOEXEC, syscall.ENOTDIR,
			syscall.EISDIR, syscall.ETXTBSY, syscall.EPERM, syscall.ELOOP, syscall.E2BIG:
			return invalidErr(err, "starting %q: %v", info.Argv[0], err)
		}
	}
	return internalErr(err, "starting %q: %v", info.Argv[0], err)
}
