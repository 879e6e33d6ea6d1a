// Package workspace is the client-side file system server of ACP: it
// serves fs/read_text_file and fs/write_text_file for an agent, confined
// to a set of root directories. It is the twin of terminal.Manager: the
// terminal runtime runs the agent's commands, a [Workspace] reads and
// writes the agent's files, both within the same roots and under the same
// sandbox rules.
//
// A Workspace implements acp.FileReader and acp.FileWriter, so a client
// that embeds one advertises clientCapabilities.fs and serves both
// methods:
//
//	ws, err := workspace.NewWorkspace([]string{dir}, &workspace.WritePolicy{
//		Mode: sandbox.WorkspaceWrite, // the mode the commands run in
//	})
//	if err != nil {
//		return err
//	}
//	defer ws.Close()
//	conn, err := acp.StartAgent(cmd, myClient{Workspace: ws, Manager: m, …}, nil)
//
// What it guarantees, with an untrusted agent on the other side:
//
//   - No read or write leaves the roots: paths must be absolute, every open
//     goes through an *os.Root of its root (the kernel refuses a step out),
//     and a symlink leading out is reported as outside the workspace.
//   - Only regular files are read or written; a FIFO, device or socket is
//     refused without blocking.
//   - A read returns at most [MaxReadBytes]; ask for a range with line and
//     limit.
//   - A write replaces the file by rename, so a failed one leaves the old
//     content whole; it keeps the file's mode and owner, and creates no
//     missing directory.
//   - Writes obey a [WritePolicy], the sandbox mode of the run's commands:
//     none in sandbox.ReadOnly, none into git's own files in
//     sandbox.WorkspaceWrite, so an agent cannot have the client write for
//     it what its commands may not.
//
// Errors are ACP errors with a message naming the path: invalid params
// (-32602) for a path that is not absolute or lies outside the roots,
// resource not found for a missing file, permission denied for a write the
// policy refuses.
package workspace
