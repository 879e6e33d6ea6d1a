package client

import (
	"context"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// handler is the acp.Client acpterm serves the agent with. The embedded
// terminal.Manager serves terminal/* (and so advertises the terminal
// capability); ReadTextFile and WriteTextFile advertise fs.
type handler struct {
	*terminal.Manager
	ws   *Workspace
	perm *approver
	r    Renderer
	disp *displayTerminals // session updates go through it to r
}

var (
	_ acp.Client          = (*handler)(nil)
	_ acp.TerminalHandler = (*handler)(nil)
	_ acp.FileReader      = (*handler)(nil)
	_ acp.FileWriter      = (*handler)(nil)
)

func (h *handler) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	h.disp.SessionUpdate(n, acp.RawParams(ctx))
	return nil
}

func (h *handler) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return h.perm.RequestPermission(ctx, req)
}

func (h *handler) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	return h.ws.ReadTextFile(ctx, req)
}

func (h *handler) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	return h.ws.WriteTextFile(ctx, req)
}
