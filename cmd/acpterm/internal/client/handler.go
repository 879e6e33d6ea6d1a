package client

import (
	"context"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/confined"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/mcptie"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/workspace"
)

// handler is the acp.Client acpterm serves the agent with. The embedded
// TerminalHandler (the run's terminal.Runtime: a terminal.Manager here,
// the exec server with --remote) serves terminal/* (and so advertises the
// terminal capability); ReadTextFile and WriteTextFile advertise fs and
// go to files, the workspace here or on the target (remote.Files).
type handler struct {
	acp.TerminalHandler
	fs   files
	perm *permission.Approver
	r    render.Renderer
	disp *render.DisplayTerminals // session updates go through it to r
	// shown holds terminal/create's answer until the renderer has the
	// terminal; nil answers at once.
	shown *shownGate
	// watch, when set, follows the execute tool calls.
	watch *confined.Watch
	// ties, when set, ties the MCP server's commands to tool calls.
	ties *mcptie.Ties
	// state, when set, is told of each v2 state update (jobs_v2.go).
	state func(sid acp.SessionID)
}

// CreateTerminal serves terminal/create, answering once the renderer has
// shown the terminal (see shownGate).
func (h *handler) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	resp, err := h.TerminalHandler.CreateTerminal(ctx, req)
	if err == nil && h.shown != nil {
		h.shown.wait(ctx, req.SessionID, resp.TerminalID)
	}
	return resp, err
}

// files serves fs/*: a workspace.Workspace, or the target's.
type files interface {
	acp.FileReader
	acp.FileWriter
}

var _ files = (*workspace.Workspace)(nil)

var (
	_ acp.Client          = (*handler)(nil)
	_ acp.TerminalHandler = (*handler)(nil)
	_ acp.FileReader      = (*handler)(nil)
	_ acp.FileWriter      = (*handler)(nil)
)

func (h *handler) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	if h.watch != nil {
		h.watch.Update(n.Update)
	}
	h.disp.SessionUpdate(n, acp.RawParams(ctx))
	h.ties.Update(n)
	return nil
}

func (h *handler) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	resp, err := h.perm.RequestPermission(ctx, req)
	if err == nil {
		// Before the agent has the answer: it runs the call only then.
		h.ties.Permission(req, allows(req, resp))
	}
	return resp, err
}

// allows reports whether resp chose an option of req that allows.
func allows(req *acp.RequestPermissionRequest, resp *acp.RequestPermissionResponse) bool {
	sel, ok := resp.Outcome.(*acp.SelectedPermissionOutcome)
	if !ok {
		return false
	}
	for _, o := range req.Options {
		if o.OptionID == sel.OptionID {
			return o.Kind == acp.PermissionOptionKindAllowOnce || o.Kind == acp.PermissionOptionKindAllowAlways
		}
	}
	return false
}

func (h *handler) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	return h.fs.ReadTextFile(ctx, req)
}

func (h *handler) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	return h.fs.WriteTextFile(ctx, req)
}
