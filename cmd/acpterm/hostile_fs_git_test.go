//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// The fs-git hostile case: an agent that has the client's fs server write
// what its sandboxed commands may not, git's files (hooks and config run
// later, outside any sandbox, when the user runs git), or anything at all
// under --sandbox read-only.

// fsWritesEnv lists the paths, relative to the session's cwd, that the
// fs-git agent writes.
const fsWritesEnv = "ACPTERM_E2E_FS_WRITES"

// fsPlanted is what the fs-git agent writes.
const fsPlanted = "planted by the agent\n"

func init() {
	registerHostile("fs-git", func() int { return serveAgent(&fsGitAgent{}) })
}

// fsGitAgent writes each path of fsWritesEnv in turn and reports how each
// write ended.
type fsGitAgent struct{ fsAgent }

func (a *fsGitAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn, ws := a.conn.Load(), *a.cwd.Load()
	var calls []fsCall
	for _, name := range strings.Split(os.Getenv(fsWritesEnv), ",") {
		_, err := conn.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: req.SessionID, Path: filepath.Join(ws, name), Content: fsPlanted})
		c := fsCall{Name: name, Op: "write"}
		if err != nil {
			c.Code, c.Message = acp.ErrorCode(err), err.Error()
		}
		calls = append(calls, c)
	}
	return a.report(ctx, req.SessionID, calls)
}

// gitWorkspace makes a workspace holding git's files the ways an agent can
// reach them, and returns it with the writes the fs-git agent is to try:
// the first ones are git's, the last two ordinary files.
func gitWorkspace(t *testing.T) (ws string, gitWrites, plainWrites []string) {
	t.Helper()
	ws = t.TempDir()
	for _, d := range []string{".git/hooks", "a/b/.git", "wt/data/gd", "x", "src"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{
		".git/config":     "[core]\n",
		"a/b/.git/config": "[core]\n",
		// A worktree whose git directory lies below it.
		"wt/.git":     "gitdir: data/gd\r\n",
		"src/main.go": "package main\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".git", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	gitWrites = []string{
		".git/config",
		".git/hooks/post-checkout",
		"a/b/.git/config", // a nested repository
		"link/config",     // through a symlink to .git
		"wt/data/gd/config",
		"x/.git", // would make x a repository
	}
	plainWrites = []string{"src/main.go", "new.txt"}
	return ws, gitWrites, plainWrites
}

// TestHostileFSGit: through the real binary, fs/write_text_file obeys the
// sandbox of the run's commands. In workspace-write (the default) git's
// files are refused and ordinary files written; in read-only every write
// is refused; --writable-git lets git's files be written too.
func TestHostileFSGit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		flags     []string
		gitOK     bool   // git's files are written
		plainOK   bool   // ordinary files are written
		refusedBy string // what a refusal's message says
	}{
		{name: "workspace-write", plainOK: true, refusedBy: "git"},
		{name: "read-only", flags: []string{"--sandbox", "read-only"}, refusedBy: "the sandbox is read-only"},
		{name: "writable-git", flags: []string{"--writable-git"}, gitOK: true, plainOK: true},
		{name: "off", flags: []string{"--sandbox", "off"}, gitOK: true, plainOK: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, gitWrites, plainWrites := gitWorkspace(t)
			writes := append(append([]string(nil), gitWrites...), plainWrites...)
			args := append([]string{"run", "--format", "json", "--approve-all"}, tt.flags...)
			args = append(args, "-p", "go", "--", testExe(t))
			r := acpterm(t, opts{env: []string{fakeAgentEnv + "=fs-git", fsWritesEnv + "=" + strings.Join(writes, ",")}, dir: ws}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
			}
			var calls []fsCall
			fsReport(t, r.stdout, &calls)
			if len(calls) != len(writes) {
				t.Fatalf("%d writes reported, want %d: %+v", len(calls), len(writes), calls)
			}
			for i, c := range calls {
				ok := tt.plainOK
				if i < len(gitWrites) {
					ok = tt.gitOK
				}
				b, err := os.ReadFile(filepath.Join(ws, c.Name))
				written := err == nil && string(b) == fsPlanted
				switch {
				case ok && (c.Code != 0 || !written):
					t.Errorf("write %s: code %d %q, written %v; want it written", c.Name, c.Code, c.Message, written)
				case !ok && (c.Code != acp.CodePermissionDenied || !strings.Contains(c.Message, tt.refusedBy) || written):
					t.Errorf("write %s (-want +got):\n-code %d containing %q, not written\n+code %d %q, written %v",
						c.Name, acp.CodePermissionDenied, tt.refusedBy, c.Code, c.Message, written)
				}
			}
		})
	}
}
