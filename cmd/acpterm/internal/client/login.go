package client

import (
	"context"
	"os/exec"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/login"
)

// This file is the client's seam with package login: `acpterm login`
// (Login) and the authentication of a run's session (authHost).

// LoginConfig is one `acpterm login`: login's settings, and how the agent
// is started. Zero fields mean the defaults.
type LoginConfig struct {
	login.Config
	// Profile is what the agent writes, and Confine runs it, and its
	// terminal login, in a sandbox where only that (and its npm cache) is
	// writable: as acpterm run starts it (agentstart.Start).
	Profile *agents.Resolved
	Confine bool
}

// Login logs in to an agent (login.Run) and returns the exit status. The
// agent and its terminal login are started as acpterm run starts the
// agent (agentstart.Start).
func Login(ctx context.Context, cfg *LoginConfig) int {
	c := cfg.Config
	if c.InitTimeout <= 0 {
		c.InitTimeout = DefaultInitTimeout
	}
	c.Version = Version()
	c.Start = loginStarter{profile: cfg.Profile, confine: cfg.Confine}
	return login.Run(ctx, &c)
}

// loginStarter starts what a login runs as acpterm run starts the agent.
type loginStarter struct {
	profile *agents.Resolved
	confine bool
}

func (s loginStarter) Command(argv []string, dir string, forLogin bool) (*exec.Cmd, string, func(), error) {
	st := &agentstart.Start{Agent: argv, Dir: dir, Profile: s.profile, Confine: s.confine}
	if forLogin && st.Profile != nil {
		// Its settings are for the agent's ACP server, not its login.
		prof := *st.Profile
		prof.ConfinedArgs = nil
		st.Profile = &prof
	}
	cmd, sb, err := st.Command()
	if err != nil {
		return nil, "", nil, err
	}
	return cmd, agentstart.MissingLine(sb), func() { _ = sb.Cleanup() }, nil
}

func (loginStarter) DescribeExit(err error) string { return describeExit(err) }
func (loginStarter) StartError(err error) error    { return unwrapExec(err) }

// authHost is the driver as a login.Host: the calls that open a session
// are bounded, interrupted and explained as the run's other calls are.
type authHost struct{ d *driver }

func (h authHost) Conn() *acp.ClientConn { return h.d.conn }

func (h authHost) CallCtx(ctx context.Context, timeout time.Duration) (context.Context, func()) {
	return h.d.callCtx(ctx, timeout)
}

func (h authHost) CallFailed(ctx context.Context, method string, err error) (int, string) {
	return h.d.callFailed(ctx, method, err)
}

func (h authHost) Warn(line string) { h.d.warn(line) }
func (h authHost) Say(line string)  { h.d.writeStderr(line) }
func (h authHost) Suspend() func()  { return h.d.r.Suspend() }
