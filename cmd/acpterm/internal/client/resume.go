package client

import (
	"context"
	"fmt"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// This file opens the session: a new one, or one to continue (--resume,
// --session) with session/load, which replays its history, or
// session/resume, which does not. It also remembers the sessions in the
// store.

// resumeTarget is the session to continue: --session's, or the last one
// stored for this agent and cwd with --resume; "" for a new session. It
// is worked out before the agent starts, so that a --resume with nothing
// to resume fails at once.
func (d *driver) resumeTarget() (acp.SessionID, int, string) {
	c := &d.cfg
	switch {
	case c.ResumeID != "":
		return acp.SessionID(c.ResumeID), ExitOK, ""
	case !c.ResumeLast:
		return "", ExitOK, ""
	case c.Store == nil:
		return "", ExitUsage, "--resume: there is no session store to resume from"
	}
	e, ok, err := c.Store.Last(c.AgentName, c.Agent, d.remoteHost(), d.cwd)
	if err != nil {
		return "", ExitFailure, "--resume: " + err.Error()
	}
	if !ok {
		who := textsafe.QuoteArgs(c.Agent)
		if c.AgentName != "" {
			who = textsafe.Quote(c.AgentName)
		}
		where := d.cwd
		if h := d.remoteHost(); h != "" {
			where += " on " + h
		}
		return "", ExitUsage, fmt.Sprintf("--resume: no session of %s in %s is stored (acpterm sessions lists them)", who, textsafe.Line(where))
	}
	d.stored = &e
	return acp.SessionID(e.SessionID), ExitOK, ""
}

// open authenticates if need be (up front with --auth, else when the agent
// asks) and opens the session: resumeID's, or a new one. Then it applies
// --mode, --model and --set.
func (d *driver) open(ctx context.Context, authOpts []acp.AuthOption, resumeID acp.SessionID) (int, string) {
	auth, code, msg := d.startAuth(ctx, authOpts)
	if auth == nil {
		return code, msg
	}
	var st *sessionState
	if resumeID == "" {
		sess, code, msg := auth.newSession(ctx)
		if sess == nil {
			return code, msg
		}
		if sess.SessionID == "" {
			return ExitAgent, "the agent answered session/new without a sessionId"
		}
		st = &sessionState{sid: sess.SessionID, modes: sess.Modes, options: sess.ConfigOptions, models: d.conn.SessionModels(sess.SessionID)}
	} else {
		st, code, msg = d.resume(ctx, auth, resumeID)
		if st == nil {
			return code, msg
		}
	}
	if err := d.mgr.SetSessionCwd(st.sid, d.cwd); err != nil {
		return ExitFailure, err.Error()
	}
	d.mu.Lock()
	d.sid = st.sid
	d.mu.Unlock()
	return d.configureSession(ctx, d.view, st)
}

// resume continues session id: with session/load when the agent
// advertises loadSession (it replays the history, which is shown marked
// as such), else with session/resume when it advertises
// sessionCapabilities.resume. An agent with neither is a usage error.
func (d *driver) resume(ctx context.Context, auth *authRun, id acp.SessionID) (*sessionState, int, string) {
	d.mu.Lock()
	caps := d.caps
	d.mu.Unlock()
	switch {
	case caps.LoadSession:
		var resp *acp.LoadSessionResponse
		d.sw.beginReplay(id)
		d.jobs.replay(true)
		code, msg := auth.call(ctx, "session/load", func(ctx context.Context) error {
			var err error
			resp, err = d.conn.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: d.cwd, MCPServers: []acp.MCPServer{}})
			return err
		})
		d.jobs.replay(false)
		d.sw.endReplay(id)
		if code != ExitOK {
			return nil, code, msg
		}
		return &sessionState{sid: id, modes: resp.Modes, options: resp.ConfigOptions, models: d.conn.SessionModels(id)}, ExitOK, ""
	case caps.SessionCapabilities != nil && caps.SessionCapabilities.Resume != nil:
		var resp *acp.ResumeSessionResponse
		code, msg := auth.call(ctx, "session/resume", func(ctx context.Context) error {
			var err error
			resp, err = d.conn.ResumeSession(ctx, &acp.ResumeSessionRequest{SessionID: id, Cwd: d.cwd, MCPServers: []acp.MCPServer{}})
			return err
		})
		if code != ExitOK {
			return nil, code, msg
		}
		d.sw.resumed(id)
		return &sessionState{sid: id, modes: resp.Modes, options: resp.ConfigOptions, models: d.conn.SessionModels(id)}, ExitOK, ""
	}
	return nil, ExitUsage, "the agent cannot continue a session: it advertises neither loadSession (session/load) nor sessionCapabilities.resume (session/resume)"
}

// remember records the session in the store as a prompt is sent: the
// first prompt's first line becomes its title, and each one its time of
// last use. A store that cannot be written is reported once.
func (d *driver) remember(prompt string) {
	c := &d.cfg
	if c.Store == nil {
		return
	}
	d.mu.Lock()
	sid := d.sid
	d.mu.Unlock()
	e := sessionstore.Entry{SessionID: string(sid), Agent: c.AgentName, Command: c.Agent, Target: d.remoteHost(), Cwd: d.cwd,
		Title: prompt, Updated: time.Now()}
	if d.stored != nil && d.stored.SessionID == e.SessionID {
		e.Created = d.stored.Created
	}
	if err := c.Store.Record(e); err != nil {
		d.warn("acpterm: cannot remember the session: " + err.Error())
		c.Store = nil // once is enough
		return
	}
	d.stored = &e
}

// remoteHost is the --remote target without its directory, where the
// session's cwd is, or "" for this machine.
func (d *driver) remoteHost() string {
	if d.remote == nil {
		return ""
	}
	return d.remote.host
}
