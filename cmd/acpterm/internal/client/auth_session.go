package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// authUserTimeout bounds an authenticate with an agent-type method, which
// may wait for the user (codex's "chatgpt" opens a browser login); env_var
// methods get the InitTimeout like the other setup calls.
const authUserTimeout = 10 * time.Minute

// authRun is the authentication of one `acpterm run`.
//
// When authenticate is called: up front, before session/new, only for the
// method named by --auth (Config.Auth). Otherwise acpterm first tries
// session/new, and only when the agent answers -32000 does it authenticate
// — once — and try again: an agent that needs nothing (or remembers an
// earlier login) is not made to store a key it did not ask for, as codex
// does on every authenticate. The method then is the env_var method whose
// variables are set, when exactly one is, else the one the user picks on
// the terminal. When that is not possible, or the agent still answers
// -32000, the run ends with authHelp: every method and the command that
// sets it up.
type authRun struct {
	d      *driver
	opts   []acp.AuthOption
	lookup lookupFunc
	used   *acp.AuthOption // the method authenticated with; nil if none
	// ambiguous is how many env_var methods had their variables set, when
	// more than one did.
	ambiguous int
}

// startAuth authenticates with the --auth method, if one was given, right
// after initialize.
func (d *driver) startAuth(ctx context.Context, opts []acp.AuthOption) (*authRun, int, string) {
	a := &authRun{d: d, opts: opts, lookup: os.LookupEnv}
	id := d.cfg.Auth
	if id == "" {
		return a, ExitOK, ""
	}
	o := findAuthMethod(opts, id)
	switch {
	case o == nil:
		return nil, ExitUsage, fmt.Sprintf("--auth %s: the agent offers no such method (it offers %s)", id, authIDs(opts))
	case o.Kind == acp.AuthKindTerminal:
		return nil, ExitUsage, fmt.Sprintf("--auth %s: this method is a terminal login; run: %s", id, nextStep(d.cfg.Agent, o))
	case !authenticatable(o):
		return nil, ExitUsage, fmt.Sprintf("--auth %s: acpterm cannot use methods of type %q", id, o.Kind)
	}
	if missing := missingVars(o, a.lookup); len(missing) > 0 {
		return nil, ExitUsage, fmt.Sprintf("--auth %s needs %s set in the environment: %s", id, strings.Join(missing, " and "), nextStep(d.cfg.Agent, o))
	}
	if code, msg := a.authenticate(ctx, o); code != ExitOK {
		return nil, code, msg
	}
	return a, ExitOK, ""
}

// newSession sends session/new (call). A nil session comes with the exit
// status and message of the failure.
func (a *authRun) newSession(ctx context.Context) (*acp.NewSessionResponse, int, string) {
	var sess *acp.NewSessionResponse
	code, msg := a.call(ctx, "session/new", func(ctx context.Context) error {
		var err error
		sess, err = a.d.conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: a.d.cwd, MCPServers: []acp.MCPServer{}})
		return err
	})
	if code != ExitOK {
		return nil, code, msg
	}
	return sess, ExitOK, ""
}

// call makes the call that opens a session (session/new, session/load,
// session/resume), authenticating once when the agent answers that it
// needs it, then trying again.
func (a *authRun) call(ctx context.Context, method string, do func(ctx context.Context) error) (int, string) {
	d := a.d
	for {
		callCtx, done := d.callCtx(ctx, d.cfg.InitTimeout)
		err := do(callCtx)
		var ae *acp.Error
		if err == nil || callCtx.Err() != nil || !errors.As(err, &ae) || ae.Code != acp.CodeAuthRequired {
			if err != nil {
				code, msg := d.callFailed(callCtx, method, err)
				done()
				return code, msg
			}
			done()
			return ExitOK, ""
		}
		done()
		if len(a.opts) == 0 {
			// qwen-code repeats its methods in the error's data.
			a.opts = acp.ParseAuthOptions(ae.Data)
		}
		if a.used != nil {
			return ExitAgent, a.stillRequired(ae, fmt.Sprintf("after authenticate with %s", textsafe.Quote(string(a.used.ID))))
		}
		o, code, msg := a.pick(ctx)
		if code != ExitOK {
			return code, msg
		}
		if o == nil {
			return ExitAgent, a.stillRequired(ae, "")
		}
		if code, msg := a.authenticate(ctx, o); code != ExitOK {
			return code, msg
		}
	}
}

// pick chooses the method to authenticate with after a -32000: the one
// env_var method whose variables are set, else the user's choice on the
// terminal. It returns nil when there is none to take.
func (a *authRun) pick(ctx context.Context) (*acp.AuthOption, int, string) {
	o, n := autoAuthMethod(a.opts, a.lookup)
	if o != nil {
		return o, ExitOK, ""
	}
	if n > 1 {
		a.ambiguous = n
	}
	return a.choose(ctx)
}

// authenticate calls authenticate with o.
func (a *authRun) authenticate(ctx context.Context, o *acp.AuthOption) (int, string) {
	d := a.d
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
	d.warn(fmt.Sprintf("acpterm: authenticating with %s%s", textsafe.Quote(string(o.ID)), how))
	timeout := d.cfg.InitTimeout
	if o.Kind == acp.AuthKindAgent {
		timeout = max(timeout, authUserTimeout)
	}
	callCtx, done := d.callCtx(ctx, timeout)
	defer done()
	_, err := d.conn.Authenticate(callCtx, &acp.AuthenticateRequest{MethodID: o.ID})
	a.used = o
	if err == nil {
		return ExitOK, ""
	}
	var ae *acp.Error
	switch {
	case callCtx.Err() != nil && errors.Is(context.Cause(callCtx), errTimeout):
		return ExitAgent, fmt.Sprintf("the agent did not answer authenticate within %s", timeout)
	case callCtx.Err() == nil && errors.As(err, &ae):
		a.showHelp()
		return ExitAgent, fmt.Sprintf("authenticate with %s failed: %s", textsafe.Quote(string(o.ID)), authErrorText(err))
	}
	return d.callFailed(callCtx, "authenticate", err)
}

// stillRequired shows the ways to log in and returns the run's error
// message for an agent that still wants authentication.
func (a *authRun) stillRequired(ae *acp.Error, when string) string {
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
func (a *authRun) showHelp() {
	for _, line := range authHelp(a.d.cfg.Agent, a.opts) {
		a.d.writeStderr(line)
	}
}

// choose asks the user on the terminal which method to authenticate with,
// among those used through authenticate; nil when there is no terminal to
// ask on or the user chose none.
func (a *authRun) choose(ctx context.Context) (*acp.AuthOption, int, string) {
	d := a.d
	in, ok := d.cfg.TTYIn.(io.ReadCloser)
	cands := authCandidates(a.opts, authenticatable)
	if !ok || d.cfg.TTYOut == nil || len(cands) == 0 {
		return nil, ExitOK, ""
	}
	resume := d.r.Suspend()
	defer resume()
	// callCtx: Ctrl-C during setup cancels it (and ends the run).
	callCtx, done := d.callCtx(ctx, 0)
	defer done()
	o, err := askAuthMethod(callCtx, in, d.cfg.TTYOut, "The agent needs authentication. Methods it offers:", cands)
	if err != nil {
		code, msg := d.callFailed(callCtx, "authenticate", err)
		return nil, code, msg
	}
	return o, ExitOK, ""
}
