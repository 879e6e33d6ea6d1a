package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
	ws.Hide(append(slices.Clone(s.hello.Sandbox.Hidden), s.hello.Sandbox.Redacted...), s.hello.Sandbox.Shown)
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

// Files serves ACP's fs methods on the target: the exec server's
// workspace (its --cwd), under the write policy of its sandbox. A client
// offers them to an agent only by choice, as it offers a local
// *workspace.Workspace: embed Files (or its two methods) in the ACP
// client. A Client alone serves terminals and nothing else, so that
// embedding one does not advertise fs read and write.
type Files struct{ c *Client }

// Files returns the target's fs methods, for a client that chooses to
// offer them (see Files).
func (c *Client) Files() *Files { return &Files{c: c} }

// ReadTextFile reads a text file on the target (fs/read_text_file). The
// server's errors keep their ACP codes, so that acp.WireError passes them
// on to an agent as they are.
func (f *Files) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	var resp acp.ReadTextFileResponse
	if err := f.c.call(ctx, methodReadTextFile, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// WriteTextFile writes a text file on the target (fs/write_text_file). A
// request too large for the server's message limit is refused here.
func (f *Files) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", acp.ErrInvalidParams, err)
	}
	if len(b) > maxWriteEncoded {
		return nil, fmt.Errorf("%w: %q: the content takes more than %d MiB to send to the exec server; write it in a terminal",
			acp.ErrInvalidParams, req.Path, maxWriteEncoded>>20)
	}
	var resp acp.WriteTextFileResponse
	if err := f.c.call(ctx, methodWriteTextFile, json.RawMessage(b), &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

var (
	_ acp.FileReader = (*Files)(nil)
	_ acp.FileWriter = (*Files)(nil)
)
