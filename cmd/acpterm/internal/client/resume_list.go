package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/agentstart"
)

// DefaultListTimeout bounds ListAgentSessions when ListConfig.Timeout is 0:
// starting the agent, initialize and every page of session/list.
const DefaultListTimeout = 20 * time.Second

// Bounds of a listing: an agent may have thousands of sessions, or page
// forever.
const (
	maxListPages    = 20
	maxListSessions = 1000
)

// ErrNoSessionList is ListAgentSessions' error for an agent that does not
// advertise sessionCapabilities.list.
var ErrNoSessionList = errors.New("the agent does not list its sessions (it does not advertise sessionCapabilities.list)")

// ListConfig is one ListAgentSessions.
type ListConfig struct {
	// Agent is the agent's command line.
	Agent []string
	// Dir is where the agent runs; "" means the current directory.
	Dir string
	// Cwd, when set, asks only for the sessions of that directory.
	Cwd string
	// Timeout bounds the whole listing (0: DefaultListTimeout).
	Timeout time.Duration
	// Stderr takes the agent's stderr (nil: discarded).
	Stderr io.Writer
	// Profile is what the agent writes, and Confine runs it in a sandbox
	// where only that (and its npm cache) is writable: as acpterm run
	// starts it (agentstart.Start).
	Profile *agents.Resolved
	Confine bool
}

// ListAgentSessions starts the agent, initializes it, and asks it for its
// sessions with session/list, following its pages (at most 20 pages and
// 1000 sessions). The agent is stopped before it returns, and killed if
// the listing takes longer than the timeout.
func ListAgentSessions(ctx context.Context, cfg *ListConfig) ([]acp.SessionInfo, error) {
	if len(cfg.Agent) == 0 || cfg.Agent[0] == "" {
		return nil, errors.New("no agent command given")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultListTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := &agentstart.Start{Agent: cfg.Agent, Dir: cfg.Dir, Profile: cfg.Profile, Confine: cfg.Confine}
	cmd, sb, err := start.Command()
	if err != nil {
		return nil, err
	}
	// Removed once the agent is gone (conn.Close, deferred after this).
	defer func() { _ = sb.Cleanup() }()
	if line := agentstart.MissingLine(sb); line != "" && cfg.Stderr != nil {
		fmt.Fprintln(cfg.Stderr, line)
	}
	cmd.Stderr = cfg.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	conn, err := acp.StartAgent(cmd, listingClient{}, &acp.ConnOptions{Contain: true})
	if err != nil {
		return nil, fmt.Errorf("cannot start the agent %s: %w", cfg.Agent[0], unwrapExec(err))
	}
	defer conn.Close()
	// A timeout ends the agent at once: one that stopped reading could
	// otherwise hold up Close.
	defer context.AfterFunc(ctx, conn.Kill)()
	init, _, err := conn.InitializeAuth(ctx, &acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion1,
		ClientInfo:      &acp.Implementation{Name: "acpterm", Version: Version()},
	})
	if err != nil {
		return nil, listError(ctx, "initialize", timeout, err)
	}
	if init.AgentCapabilities == nil || init.AgentCapabilities.SessionCapabilities == nil || init.AgentCapabilities.SessionCapabilities.List == nil {
		return nil, ErrNoSessionList
	}
	req := &acp.ListSessionsRequest{}
	if cfg.Cwd != "" {
		req.Cwd = &cfg.Cwd
	}
	var all []acp.SessionInfo
	for range maxListPages {
		resp, err := conn.ListSessions(ctx, req)
		if err != nil {
			return all, listError(ctx, "session/list", timeout, err)
		}
		all = append(all, resp.Sessions...)
		if len(all) >= maxListSessions {
			return all[:maxListSessions], nil
		}
		if resp.NextCursor == nil || *resp.NextCursor == "" || (req.Cursor != nil && *req.Cursor == *resp.NextCursor) {
			break
		}
		req.Cursor = resp.NextCursor
	}
	return all, nil
}

func listError(ctx context.Context, method string, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the agent did not answer %s within %s", method, timeout)
	}
	var ae *acp.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("the agent answered %s with an error: %s (code %d)", method, ae.Message, ae.Code)
	}
	return fmt.Errorf("%s: %w", method, err)
}

// listingClient serves an agent that is only asked for its sessions: it
// has no session, so it shows nothing and allows nothing.
type listingClient struct{}

func (listingClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (listingClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }
