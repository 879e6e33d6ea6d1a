package login

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/exitcode"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// authUserTimeout bounds an authenticate with an agent-type method, which
// may wait for the user (codex's "chatgpt" opens a browser login); env_var
// methods get the InitTimeout like the other setup calls.
const authUserTimeout = 10 * time.Minute

// Host is what a Session needs of the run that opens the session: the
// CLI's session driver is one.
type Host interface {
	// Conn is the connection to the initialized agent.
	Conn() *acp.ClientConn
	// CallCtx is the context of one call to the agent, bounded by timeout
	// when positive; done releases it.
	CallCtx(ctx context.Context, timeout time.Duration) (callCtx context.Context, done func())
	// CallFailed explains why a call made with a CallCtx failed: the
	// exit status and a message.
	CallFailed(callCtx context.Context, method string, err error) (int, string)
	// Warn writes a diagnostic line, which may quote the agent.
	Warn(line string)
	// Say writes a line already safe to print to stderr.
	Say(line string)
	// Suspend stops what the run shows live while the user is asked, and
	// returns what resumes it.
	Suspend() (resume func())
}

// Options are a Session's settings, from acpterm run's flags.
type Options struct {
	// Agent is the agent's command line, for the commands authHelp shows.
	Agent []string
	// Method is --auth: the method to authenticate with up front ("" for
	// none).
	Method string
	// InitTimeout bounds authenticate with an env_var method.
	InitTimeout time.Duration
	// TTYIn and TTYOut, when both set, are where the user picks a method.
	TTYIn  io.Reader
	TTYOut io.Writer
}

// Session is the authentication of one `acpterm run`.
//
// When authenticate is called: up front, before session/new, only for the
// method named by --auth (Options.Method). Otherwise acpterm first tries
// session/new, and only when the agent answers -32000 does it authenticate
// — once — and try again: an agent that needs nothing (or remembers an
// earlier login) is not made to store a key it did not ask for, as codex
// does on every authenticate. The method then is the env_var method whose
// variables are set, when exactly one is, else the one the user picks on
// the terminal. When that is not possible, or the agent still answers
// -32000, the run ends with authHelp: every method and the command that
// sets it up.
type Session struct {
	h      Host
	o      Options
	opts   []acp.AuthOption
	lookup lookupFunc
	used   *acp.AuthOption // the method authenticated with; nil if none
	// ambiguous is how many env_var methods had their variables set, when
	// more than one did.
	ambiguous int
}

// Start begins the authentication of a run whose agent advertised opts in
// its initialize answer: it authenticates with the --auth method, if one
// was given. A nil Session comes with the exit status and message of the
// failure.
func Start(ctx context.Context, h Host, opts []acp.AuthOption, o *Options) (*Session, int, string) {
	return start(ctx, h, opts, o, os.LookupEnv)
}

// start is Start with the environment read through lookup.
func start(ctx context.Context, h Host, opts []acp.AuthOption, o *Options, lookup lookupFunc) (*Session, int, string) {
	a := &Session{h: h, o: *o, opts: opts, lookup: lookup}
	id := o.Method
	if id == "" {
		return a, exitcode.OK, ""
	}
	m := findAuthMethod(opts, id)
	switch {
	case m == nil:
		return nil, exitcode.Usage, fmt.Sprintf("--auth %s: the agent offers no such method (it offers %s)", id, authIDs(opts))
	case m.Kind == acp.AuthKindTerminal:
		return nil, exitcode.Usage, fmt.Sprintf("--auth %s: this method is a terminal login; run: %s", id, nextStep(o.Agent, m))
	case !authenticatable(m):
		return nil, exitcode.Usage, fmt.Sprintf("--auth %s: acpterm cannot use methods of type %q", id, m.Kind)
	}
	if missing := missingVars(m, a.lookup); len(missing) > 0 {
		return nil, exitcode.Usage, fmt.Sprintf("--auth %s needs %s set in the environment: %s", id, strings.Join(missing, " and "), nextStep(o.Agent, m))
	}
	if code, msg := a.authenticate(ctx, m); code != exitcode.OK {
		return nil, code, msg
	}
	return a, exitcode.OK, ""
}

// Call makes the call that opens a session (session/new, session/load,
// session/resume), authenticating once when the agent answers that it
// needs it, then trying again.
func (a *Session) Call(ctx context.Context, method string, do func(ctx context.Context) error) (int, string) {
	h := a.h
	for {
		callCtx, done := h.CallCtx(ctx, a.o.InitTimeout)
		err := do(callCtx)
		var ae *acp.Error
		if err == nil || callCtx.Err() != nil || !errors.As(err, &ae) || ae.Code != acp.CodeAuthRequired {
			if err != nil {
				code, msg := h.CallFailed(callCtx, method, err)
				done()
				return code, msg
			}
			done()
			return exitcode.OK, ""
		}
		done()
		if len(a.opts) == 0 {
			// qwen-code repeats its methods in the error's data.
			a.opts = acp.ParseAuthOptions(ae.Data)
		}
		if a.used != nil {
			return exitcode.Agent, a.stillRequired(ae, fmt.Sprintf("after authenticate with %s", textsafe.Quote(string(a.used.ID))))
		}
		o, code, msg := a.pick(ctx)
		if code != exitcode.OK {
			return code, msg
		}
		if o == nil {
			return exitcode.Agent, a.stillRequired(ae, "")
		}
		if code, msg := a.authenticate(ctx, o); code != exitcode.OK {
			return code, msg
		}
	}
}

// pick chooses the method to authenticate with after a -32000: the one
// env_var method whose variables are set, else the user's choice on the
// terminal. It returns nil when there is none to take.
func (a *Session) pick(ctx context.Context) (*acp.AuthOption, int, string) {
	o, n := autoAuthMethod(a.opts, a.lookup)
	if o != nil {
		return o, exitcode.OK, ""
	}
	if n > 1 {
		a.ambiguous = n
	}
	return a.choose(ctx)
}

// authenticate calls authenticate with o.
func (a *Session) authenticate(ctx context.Context, o *acp.AuthOption) (int, string) {
	h := a.h
	how := ""
	if o.Kind == acp.AuthKindEnvVar {
		var set []string
		for _, v := range o.Vars {
			if val, ok := a.lookup(v.Name); ok && val != "" {
				set = append(set, v.Name)
			}
		}
		how = " (" + strings.Join(set, ", ") + " set)"
	}
	h.Warn(fmt.Sprintf("acpterm: authenticating with %s%s", textsafe.Quote(string(o.ID)), how))
	timeout := a.o.InitTimeout
	if o.Kind == acp.AuthKindAgent {
		timeout = max(timeout, authUserTimeout)
	}
	callCtx, done := h.CallCtx(ctx, timeout)
	defer done()
	_, err := h.Conn().Authenticate(callCtx, &acp.AuthenticateRequest{MethodID: o.ID})
	a.used = o
	if err == nil {
		return exitcode.OK, ""
	}
	var ae *acp.Error
	switch {
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return exitcode.Agent, fmt.Sprintf("the agent did not answer authenticate within %s", timeout)
	case callCtx.Err() == nil && errors.As(err, &ae):
		a.showHelp()
		return exitcode.Agent, fmt.Sprintf("authenticate with %s failed: %s", textsafe.Quote(string(o.ID)), authErrorText(err))
	}
	return h.CallFailed(callCtx, "authenticate", err)
}

// stillRequired shows the ways to log in and returns the run's error
// message for an agent that still wants authentication.
func (a *Session) stillRequired(ae *acp.Error, when string) string {
	a.showHelp()
	msg := "the agent needs authentication (" + textsafe.Line(ae.Message) + ")"
	if when != "" {
		msg += " " + when
	}
	if a.ambiguous > 1 {
		msg += fmt.Sprintf("; the variables of %d methods are set, so acpterm did not choose: pass --auth ID", a.ambiguous)
	}
	return msg
}

// showHelp writes authHelp to stderr.
func (a *Session) showHelp() {
	for _, line := range authHelp(a.o.Agent, a.opts) {
		a.h.Say(line)
	}
}

// choose asks the user on the terminal which method to authenticate with,
// among those used through authenticate; nil when there is no terminal to
// ask on or the user chose none.
func (a *Session) choose(ctx context.Context) (*acp.AuthOption, int, string) {
	h := a.h
	in, ok := a.o.TTYIn.(io.ReadCloser)
	cands := authCandidates(a.opts, authenticatable)
	if !ok || a.o.TTYOut == nil || len(cands) == 0 {
		return nil, exitcode.OK, ""
	}
	resume := h.Suspend()
	defer resume()
	// callCtx: Ctrl-C during setup cancels it (and ends the run).
	callCtx, done := h.CallCtx(ctx, 0)
	defer done()
	o, err := askAuthMethod(callCtx, in, a.o.TTYOut, "The agent needs authentication. Methods it offers:", cands)
	if err != nil {
		code, msg := h.CallFailed(callCtx, "authenticate", err)
		return nil, code, msg
	}
	return o, exitcode.OK, ""
}
