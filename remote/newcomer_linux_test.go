package remote_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// The newcomer's test: a client of an ACP agent whose commands run
// sandboxed here (localClient) and the same client with its commands on
// an SSH target (remoteClient), written as a user of the library writes
// them: the terminal code (newcomerClient, runTurn) is shared, and the
// remote one costs a few lines more, which TestNewcomerClients keeps
// true.

// newcomerClient is an ACP client whose terminals run on rt, a
// terminal.Manager here or a remote.Client there: embedding the Runtime
// serves terminal/* and advertises terminals, nothing else.
type newcomerClient struct {
	terminal.Runtime
}

func (newcomerClient) RequestPermission(_ context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	for _, o := range req.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return &acp.RequestPermissionResponse{Outcome: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}, nil
		}
	}
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (newcomerClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

// runTurn runs one prompt with the agent in a session on cwd and returns
// what its commands wrote.
func runTurn(ctx context.Context, rt terminal.Runtime, agent *exec.Cmd, cwd, prompt string) (string, error) {
	sub, err := rt.Subscribe("", "")
	if err != nil {
		return "", err
	}
	defer sub.Close()
	conn, err := acp.StartAgent(agent, newcomerClient{rt}, nil)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.Initialize(ctx, nil); err != nil {
		return "", err
	}
	sess, err := rt.NewSessionOn(ctx, conn, &acp.NewSessionRequest{Cwd: cwd})
	if err != nil {
		return "", err
	}
	defer rt.ReleaseSession(ctx, sess.SessionID)
	if _, err := conn.Prompt(ctx, &acp.PromptRequest{SessionID: sess.SessionID,
		Prompt: []acp.ContentBlock{&acp.TextContent{Text: prompt}}}); err != nil {
		return "", err
	}
	var out strings.Builder
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return out.String(), err
		}
		out.Write(ev.Data)
		if ev.Kind == terminal.EventExited { // the output is complete
			return out.String(), nil
		}
	}
}

// policy is the sandbox of both: write only in dir.
func policy(dir string) *sandbox.Policy {
	return &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Writable: []string{dir}, WithoutMountNamespace: true}
}

func localClient(ctx context.Context, agent *exec.Cmd, dir, prompt string) (string, error) {
	m := terminal.NewManager(&terminal.Options{Policy: &terminal.Policy{Sandbox: policy(dir)}})
	defer m.Close()
	return runTurn(ctx, m, agent, dir, prompt)
}

func remoteClient(ctx context.Context, agent *exec.Cmd, target, sshConfig, bin, dir, prompt string) (string, error) {
	c, err := remote.Connect(ctx, target+dir, &remote.ConnectOptions{Sandbox: policy(dir),
		ToolArgs: []string{"-F", sshConfig}, Binary: bin})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return runTurn(ctx, c, agent, dir, prompt)
}

// TestNewcomerClients runs both clients with the built-in agent on one
// prompt: a command that writes in the workspace and tries to write
// outside it. Both run it sandboxed; the remote one's code is at most 20
// lines longer than the local one's.
func TestNewcomerClients(t *testing.T) {
	e := needSSH(t)
	ctx := testCtx(t)
	for _, where := range []string{"local", "remote"} {
		t.Run(where, func(t *testing.T) {
			dir, _ := filepath.EvalSymlinks(t.TempDir())
			outside := filepath.Join(t.TempDir(), "escaped")
			prompt := "echo made > note.txt && cat note.txt && (touch " + outside + " 2>/dev/null && echo escaped || echo refused)"
			agent := exec.Command(e.bin, "agent")
			var out string
			var err error
			if where == "local" {
				out, err = localClient(ctx, agent, dir, prompt)
			} else {
				out, err = remoteClient(ctx, agent, "ssh://target", e.config, e.bin, dir, prompt)
			}
			if err != nil {
				t.Fatalf("%s client: %v (output %q)", where, err, out)
			}
			if out != "made\nrefused\n" {
				t.Errorf("%s client: the command wrote %q, want made and refused", where, out)
			}
			if _, err := os.Stat(outside); err == nil {
				t.Errorf("%s client: the command wrote outside its workspace", where)
			}
		})
	}
	local, remote := funcLines(t, "localClient"), funcLines(t, "remoteClient")
	shared := funcLines(t, "runTurn") + funcLines(t, "policy") + typeAndMethodLines(t, "newcomerClient")
	t.Logf("local client %d lines, remote client %d lines (each with the %d shared lines)", local+shared, remote+shared, shared)
	if remote > local+20 {
		t.Errorf("the remote client takes %d lines more than the local one, want at most 20", remote-local)
	}
}

var (
	newcomerOnce sync.Once
	newcomerFile *ast.File
	newcomerFset = token.NewFileSet()
	newcomerErr  error
)

func newcomerAST(t *testing.T) *ast.File {
	t.Helper()
	newcomerOnce.Do(func() {
		newcomerFile, newcomerErr = parser.ParseFile(newcomerFset, "newcomer_linux_test.go", nil, 0)
	})
	if newcomerErr != nil {
		t.Fatal(newcomerErr)
	}
	return newcomerFile
}

// funcLines is how many lines the function name of this file spans.
func funcLines(t *testing.T, name string) int {
	t.Helper()
	for _, d := range newcomerAST(t).Decls {
		if f, ok := d.(*ast.FuncDecl); ok && f.Recv == nil && f.Name.Name == name {
			return newcomerFset.Position(f.End()).Line - newcomerFset.Position(f.Pos()).Line + 1
		}
	}
	t.Fatalf("no func %s", name)
	return 0
}

// typeAndMethodLines is how many lines the type name and its methods span.
func typeAndMethodLines(t *testing.T, name string) int {
	t.Helper()
	n := 0
	span := func(from, to token.Pos) int {
		return newcomerFset.Position(to).Line - newcomerFset.Position(from).Line + 1
	}
	for _, d := range newcomerAST(t).Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == name {
					n += span(d.Pos(), d.End())
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil && len(d.Recv.List) == 1 {
				if id, ok := d.Recv.List[0].Type.(*ast.Ident); ok && id.Name == name {
					n += span(d.Pos(), d.End())
				}
			}
		}
	}
	return n
}
