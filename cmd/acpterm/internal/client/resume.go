package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/login"
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
	auth, code, msg := login.Start(ctx, authHost{d}, authOpts, &login.Options{
		Agent: d.cfg.Agent, Method: d.cfg.Auth, InitTimeout: d.cfg.InitTimeout, TTYIn: d.cfg.TTYIn, TTYOut: d.cfg.TTYOut,
	})
	if auth == nil {
		return code, msg
	}
	var st *sessionState
	if resumeID == "" {
		var sess *acp.NewSessionResponse
		code, msg := auth.Call(ctx, "session/new", func(ctx context.Context) error {
			var err error
			sess, err = d.conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: d.cwd, MCPServers: d.mcpServers()})
			return err
		})
		if code != ExitOK {
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
	cctx, cancel := context.WithTimeout(ctx, remoteCallBound)
	err := d.mgr.SetSessionCwd(cctx, st.sid, d.cwd)
	cancel()
	if err != nil {
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
func (d *driver) resume(ctx context.Context, auth *login.Session, id acp.SessionID) (*sessionState, int, string) {
	d.mu.Lock()
	caps := d.caps
	d.mu.Unlock()
	switch {
	case d.conn.ProtocolVersion() == acp.ProtocolVersion2:
		return d.resumeV2(ctx, auth, id)
	case caps.LoadSession:
		var resp *acp.LoadSessionResponse
		d.sw.beginReplay(id)
		d.jobs.replay(true)
		code, msg := auth.Call(ctx, "session/load", func(ctx context.Context) error {
			var err error
			resp, err = d.conn.LoadSession(ctx, &acp.LoadSessionRequest{SessionID: id, Cwd: d.cwd, MCPServers: d.mcpServers()})
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
		code, msg := auth.Call(ctx, "session/resume", func(ctx context.Context) error {
			var err error
			resp, err = d.conn.ResumeSession(ctx, &acp.ResumeSessionRequest{SessionID: id, Cwd: d.cwd, MCPServers: d.mcpServers()})
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

// resumeV2 continues session id over ACP v2, where session/load is gone:
// session/resume with replayFrom start replays the history (shown marked
// as such, as session/load's is) and ends with a state update, which the
// SDK has handled before the answer returns; the pinned schema has no
// replay_complete. An agent that cannot replay (invalid params) is asked
// again to resume without the history.
func (d *driver) resumeV2(ctx context.Context, auth *login.Session, id acp.SessionID) (*sessionState, int, string) {
	req := &acp.V2ResumeSessionRequest{SessionID: id, Cwd: acp.V2AbsolutePath(d.cwd), ReplayFrom: &acp.V2ReplayFromStart{}}
	var resp *acp.V2ResumeSessionResponse
	call := func(ctx context.Context) error {
		var err error
		resp, err = d.conn.ResumeSessionV2(ctx, req)
		return err
	}
	d.sw.beginReplay(id)
	d.jobs.replay(true)
	var replayErr error
	code, msg := auth.Call(ctx, "session/resume", func(ctx context.Context) error {
		replayErr = call(ctx)
		return replayErr
	})
	d.jobs.replay(false)
	d.sw.endReplay(id)
	var ae *acp.Error
	if code != ExitOK && errors.As(replayErr, &ae) && ae.Code == acp.CodeInvalidParams {
		req.ReplayFrom = nil
		if code, msg = auth.Call(ctx, "session/resume", call); code == ExitOK {
			d.sw.resumed(id)
		}
	}
	if code != ExitOK {
		return nil, code, msg
	}
	st := &sessionState{sid: id, models: d.conn.SessionModels(id)}
	if err := convertJSON(&st.options, resp.ConfigOptions); err != nil {
		d.warn("acpterm: the session's config options: " + err.Error())
	}
	return st, ExitOK, ""
}

// convertJSON reads src's JSON into dst: a v2 value in v1's words where
// the two encode it alike.
func convertJSON(dst, src any) error {
	b, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}
