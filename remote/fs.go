package remote

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/workspace"
)

// The fs methods: ACP's own fs/read_text_file and fs/write_text_file, with
// ACP's param and result types, served on the target by the workspace
// package over the server's roots (its Terminal.Policy.Roots, else its
// default cwd), writes obeying the sandbox of its commands (mode and .git
// rule, workspace.WritePolicy): an agent cannot have the server write for
// it what its commands may not.
const (
	methodReadTextFile  = acp.MethodFSReadTextFile
	methodWriteTextFile = acp.MethodFSWriteTextFile
)

// Bounds of the fs methods on the wire. A read answer must fit the
// client's message limit (64 MiB by default) once encoded, a write
// request the server's (DefaultServerMaxMessage): past them the call is
// refused with a clear error instead of failing on the line's length.
const (
	maxReadEncoded  = 48 << 20
	maxWriteEncoded = DefaultServerMaxMessage - 64<<10
)

// workspace opens the server's roots for one fs call, with the write
// policy of its sandbox. Opening them per call keeps no state between
// calls; it costs an open and a few stats.
func (s *server) workspace() (*workspace.Workspace, error) {
	var wp workspace.WritePolicy
	roots := []string{s.hello.DefaultCwd}
	if t := s.opts.Terminal; t != nil && t.Policy != nil {
		if len(t.Policy.Roots) > 0 {
			roots = t.Policy.Roots
		}
		if sp := t.Policy.Sandbox; sp != nil {
			wp = workspace.WritePolicy{Mode: sp.Mode, WritableGit: sp.WritableGit, WritableConfig: sp.WritableConfig}
		}
	}
	if wp.Mode != sandbox.Off && s.hello.Sandbox.Error != "" {
		// The commands are refused: so are the writes made for them.
		wp.Mode = sandbox.ReadOnly
	}
	ws, err := workspace.NewWorkspace(roots, &wp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", acp.ErrInternal, err)
	}
	return ws, nil
}

func (s *server) readTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (any, error) {
	ws, err := s.workspace()
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	resp, err := ws.ReadTextFile(ctx, req)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	if len(b) > maxReadEncoded {
		return nil, fmt.Errorf("%w: %q: the content asked for takes more than %d MiB to send; read it in parts with line and limit",
			acp.ErrInvalidParams, req.Path, maxReadEncoded>>20)
	}
	return json.RawMessage(b), nil
}

func (s *server) writeTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (any, error) {
	ws, err := s.workspace()
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	return ws.WriteTextFile(ctx, req)
}

// ReadTextFile reads a text file on the target (fs/read_text_file). The
// server's errors keep their ACP codes, so that acp.WireError passes them
// on to an agent as they are.
func (c *Client) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	var resp acp.ReadTextFileResponse
	if err := c.call(ctx, methodReadTextFile, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// WriteTextFile writes a text file on the target (fs/write_text_file). A
// request too large for the server's message limit is refused here.
func (c *Client) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", acp.ErrInvalidParams, err)
	}
	if len(b) > maxWriteEncoded {
		return nil, fmt.Errorf("%w: %q: the content takes more than %d MiB to send to the exec server; write it in a terminal",
			acp.ErrInvalidParams, req.Path, maxWriteEncoded>>20)
	}
	var resp acp.WriteTextFileResponse
	if err := c.call(ctx, methodWriteTextFile, json.RawMessage(b), &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

var (
	_ acp.FileReader = (*Client)(nil)
	_ acp.FileWriter = (*Client)(nil)
)
