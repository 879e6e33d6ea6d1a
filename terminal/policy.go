package terminal

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
)

// Defaults applied to zero fields of Options and Policy.
const (
	DefaultMaxTerminalsPerSession = 64
	DefaultMaxTerminals           = 256
	DefaultOutputCeiling          = 16 << 20
	DefaultKillGrace              = 2 * time.Second
	DefaultDrainTimeout           = 100 * time.Millisecond
	DefaultSubscriberBuffer       = 1 << 20
	DefaultRetainBytes            = 16 << 20
	DefaultMaxEncodedOutput       = 24 << 20
)

// Request is a terminal/create request in Go terms.
type Request struct {
	SessionID acp.SessionID
	// Command is a shell line when Args is empty, else the program to exec.
	Command string
	Args    []string
	// Env is applied on top of the host environment and the defaults.
	Env []EnvVar
	// Cwd must be absolute; "" means the session's cwd (NewSessionOn,
	// SetSessionCwd) or Options.DefaultCwd.
	Cwd string
	// OutputByteLimit is how many bytes of output to keep; nil means the
	// ceiling (Policy.OutputCeiling), and larger values are clamped to it.
	OutputByteLimit *uint64
	// Stdin gives the command a pipe as its stdin, which Manager.Write
	// writes and Manager.CloseStdin closes; false means /dev/null. ACP's
	// terminal/create has no such field: it is for hosts of their own.
	Stdin bool
	// PTY runs the command on a pseudo-terminal of this size (zero fields
	// mean DefaultCols, DefaultRows) instead of pipes: its stdin, stdout
	// and stderr are the terminal, Manager.Write types into it,
	// Manager.Resize resizes it, and Output renders what it shows (see
	// the package doc). nil: pipes. ACP's terminal/create has no such field.
	PTY *Size
}

// EnvVar is one environment variable of a Request.
type EnvVar struct {
	Name  string
	Value string
}

// Decision is Policy.Decide's answer.
type Decision struct {
	Allow bool
	// Reason is put in the error a denied request gets (and is free text
	// for an allowed one, e.g. "allowed by rule git *").
	Reason string
}

// Allow is the Decision that lets a request run.
func Allow() Decision { return Decision{Allow: true} }

// Deny is the Decision that refuses a request with a reason the agent sees.
func Deny(reason string) Decision { return Decision{Reason: reason} }

// Policy holds the limits and the permission hook. A nil *Policy or zero
// fields mean the defaults.
type Policy struct {
	// Decide is called for each terminal/create after the request was
	// validated and resolved (so info.Cwd is absolute and info.Argv is what
	// will run) and before anything starts. It may block, e.g. to ask the
	// user; ctx is cancelled when the agent cancels the request, and Decide
	// should then return promptly (its answer is ignored). nil allows all.
	Decide func(ctx context.Context, info Info) Decision

	// MaxTerminalsPerSession bounds the live terminals (created and not yet
	// released) of one session. 0 means DefaultMaxTerminalsPerSession; a
	// negative value means no limit.
	MaxTerminalsPerSession int

	// MaxTerminals bounds the live terminals of all sessions together: the
	// session ID is the agent's to choose, so the bound per session alone
	// does not bound what an agent that makes up sessions can start. 0
	// means DefaultMaxTerminals, or MaxTerminalsPerSession when that is
	// larger, and no limit when that is negative; a negative value means
	// no limit.
	MaxTerminals int

	// OutputCeiling caps every terminal's outputByteLimit; an absent limit
	// means the ceiling. 0 means DefaultOutputCeiling.
	OutputCeiling uint64

	// Timeout, when positive, kills a terminal's command that has run that
	// long (SIGTERM, KillGrace, SIGKILL, like terminal/kill). The agent sees
	// the signal in the exit status; Output.TimedOut and Event.TimedOut
	// tell the host.
	Timeout time.Duration

	// Roots, when not empty, confines cwd: its real path (symlinks
	// resolved) must be one of the roots or inside one, else create fails
	// with ErrDenied. The command then runs in that real path.
	Roots []string

	// Sandbox, when not nil, confines every command (see package sandbox
	// and "Sandbox" in the package doc); nil runs commands with the host's
	// rights, as mode off does. The host's main must call sandbox.Init.
	//
	// A WorkspaceWrite policy with no Writable paths gets Roots (or the
	// command's cwd when Roots is empty) as Writable and, unless it has
	// Caches or a CacheDir, sandbox.DefaultCacheDir() as CacheDir: caches
	// of the commands' own, the user's staying read-only; one with no
	// Protected paths gets sandbox.DefaultProtected of the same
	// (Policy.WritableConfig turns them off). A policy of any mode but off
	// with Hidden nil hides sandbox.DefaultSecrets of the user's home
	// directory (an empty, non-nil Hidden hides nothing); see "Secrets
	// out of reach" in package sandbox. TempDir is ignored: each terminal gets a private TMPDIR,
	// removed at release. When the kernel cannot enforce the policy and
	// BestEffort is not set, create fails with ErrDenied, naming what is
	// missing; Info.Sandbox says what was applied.
	Sandbox *sandbox.Policy
}

// Isolation is how a manager makes sure no descendant of a terminal's
// command outlives the terminal. See the package doc.
type Isolation int

const (
	// IsolationAuto uses IsolationCgroup where a cgroup v2 hierarchy is
	// writable, else IsolationProcScan on Linux and IsolationGroup elsewhere.
	IsolationAuto Isolation = iota
	// IsolationCgroup: one cgroup v2 per terminal, the command started
	// inside it (clone3 CLONE_INTO_CGROUP), everything killed with
	// cgroup.kill. Linux only.
	IsolationCgroup
	// IsolationProcScan: the process group, plus a marker environment
	// variable looked up in /proc/*/environ to find descendants that left
	// the group. Linux only.
	IsolationProcScan
	// IsolationGroup: the process group only.
	IsolationGroup
)

func (i Isolation) String() string {
	switch i {
	case IsolationAuto:
		return "auto"
	case IsolationCgroup:
		return "cgroup"
	case IsolationProcScan:
		return "procscan"
	case IsolationGroup:
		return "group"
	}
	return "unknown"
}

// Options configure a Manager. A nil *Options or zero fields mean the
// defaults.
type Options struct {
	Policy *Policy

	// Shell runs args-less commands as Shell -c LINE. "" means DefaultShell().
	// A busybox binary is run as busybox sh -c LINE.
	Shell string

	// PTY, when set, runs every command an agent asks for (terminal/create)
	// on a pseudo-terminal of this size (zero fields: the defaults), as
	// acpterm run --pty does; nil leaves it to each request (MetaPTY).
	PTY *Size

	// Env is the base environment of every command; nil means os.Environ()
	// at the time of each create.
	Env []string

	// DefaultCwd is the cwd of a create that has none, in a session with no
	// cwd set by SetSessionCwd. "" makes such a create fail (ErrInvalid).
	DefaultCwd string

	// KillGrace is how long kill waits after SIGTERM before SIGKILL.
	// 0 means DefaultKillGrace.
	KillGrace time.Duration

	// DrainTimeout bounds how long the output pipe is still read once the
	// command's process has exited. The read ends as soon as the pipe is
	// empty, which holds all the process wrote (see the package doc), so
	// the bound matters only when descendants keep refilling the pipe.
	// 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration

	// Isolation chooses the no-orphans mechanism; see Isolation.
	Isolation Isolation

	// CgroupParent is the cgroup v2 directory under which the manager makes
	// its own (for IsolationAuto and IsolationCgroup). "" means the cgroup of
	// the current process, found via /proc/self/cgroup and /proc/self/mountinfo.
	CgroupParent string

	// SubscriberBuffer bounds the output bytes queued for one subscriber;
	// beyond it, output events are dropped and counted (Event.Dropped).
	// 0 means DefaultSubscriberBuffer.
	SubscriberBuffer int

	// RetainBytes bounds the final output of released terminals kept for
	// Snapshot; the newest released terminal is always kept. 0 means
	// DefaultRetainBytes; negative keeps none.
	RetainBytes int64

	// MaxEncodedOutput bounds the JSON-encoded size of the output in a
	// terminal/output answer. JSON escaping can make text up to six times
	// larger (a control byte becomes \u00XX), and peers cap the size of a
	// message (the TypeScript SDK at 32 MiB, acp connections at 64 MiB by
	// default), so output that would encode larger is cut further at the
	// front, at a character start, and reported truncated. 0 means
	// DefaultMaxEncodedOutput; the Go API (Output, Snapshot) is not cut.
	MaxEncodedOutput int

	// Logf reports problems that have no caller to return them to (e.g. a
	// cgroup that could not be removed). nil discards them.
	Logf func(format string, args ...any)
}

// config is Options with the defaults filled in.
type config struct {
	decide       func(context.Context, Info) Decision
	maxPerSess   int
	maxTotal     int
	ceiling      uint64
	timeout      time.Duration
	roots        []string
	sandbox      *sandbox.Policy // a copy; Writable filled in when the roots decide it
	shell        []string
	env          []string
	envSet       bool
	defaultCwd   string
	grace        time.Duration
	drain        time.Duration
	isolation    Isolation
	cgroupParent string
	subBuffer    int
	retain       int64
	maxEncoded   int
	logf         func(string, ...any)
	pty          *Size // Options.PTY, a copy
}

func newConfig(o *Options) config {
	if o == nil {
		o = &Options{}
	}
	p := o.Policy
	if p == nil {
		p = &Policy{}
	}
	c := config{
		decide:       p.Decide,
		maxPerSess:   p.MaxTerminalsPerSession,
		maxTotal:     p.MaxTerminals,
		ceiling:      p.OutputCeiling,
		timeout:      p.Timeout,
		roots:        append([]string(nil), p.Roots...),
		env:          append([]string(nil), o.Env...),
		envSet:       o.Env != nil,
		defaultCwd:   o.DefaultCwd,
		grace:        o.KillGrace,
		drain:        o.DrainTimeout,
		isolation:    o.Isolation,
		cgroupParent: o.CgroupParent,
		subBuffer:    o.SubscriberBuffer,
		retain:       o.RetainBytes,
		maxEncoded:   o.MaxEncodedOutput,
		logf:         o.Logf,
	}
	if o.PTY != nil {
		size := *o.PTY
		c.pty = &size
	}
	if c.maxPerSess == 0 {
		c.maxPerSess = DefaultMaxTerminalsPerSession
	}
	if c.maxTotal == 0 {
		c.maxTotal = max(DefaultMaxTerminals, c.maxPerSess)
		if c.maxPerSess < 0 {
			c.maxTotal = -1
		}
	}
	if c.ceiling == 0 {
		c.ceiling = DefaultOutputCeiling
	}
	if c.grace <= 0 {
		c.grace = DefaultKillGrace
	}
	if c.drain <= 0 {
		c.drain = DefaultDrainTimeout
	}
	if c.subBuffer <= 0 {
		c.subBuffer = DefaultSubscriberBuffer
	}
	if c.retain == 0 {
		c.retain = DefaultRetainBytes
	}
	if c.maxEncoded <= 0 {
		c.maxEncoded = DefaultMaxEncodedOutput
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	c.shell = shellArgv(o.Shell)
	if p.Sandbox != nil {
		sp := *p.Sandbox
		sp.Writable = append([]string(nil), sp.Writable...)
		sp.TempDir = ""
		if sp.Mode == sandbox.WorkspaceWrite && len(sp.Writable) == 0 && len(c.roots) > 0 {
			sp.Writable = slices.Clone(c.roots)
			if len(sp.Caches) == 0 && sp.CacheDir == "" {
				sp.CacheDir = sandbox.DefaultCacheDir()
			}
		}
		if sp.Mode == sandbox.WorkspaceWrite && sp.Protected == nil && len(c.roots) > 0 {
			sp.Protected = sandbox.DefaultProtected(c.roots...)
		}
		defaultSecrets(&sp)
		c.sandbox = &sp
	}
	return c
}

// defaultSecrets gives sp, when it confines and names no Hidden paths,
// the user's usual secrets to hide (sandbox.DefaultSecrets).
func defaultSecrets(sp *sandbox.Policy) {
	if sp.Mode == sandbox.Off || sp.Hidden != nil {
		return
	}
	home, _ := os.UserHomeDir()
	sandbox.DefaultSecrets(home).Apply(sp)
}
