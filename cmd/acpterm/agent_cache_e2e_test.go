//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

func init() {
	registerHostile("compile-cache", func() int { return serveAgent(&compileCacheAgent{}) })
}

// compileCacheAgent does what node does with its compile cache: it reads
// NODE_COMPILE_CACHE, finds there what the run before it left, and leaves
// a count for the next one; it says what it found in one message.
type compileCacheAgent struct{ baseAgent }

func (a *compileCacheAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	dir := os.Getenv("NODE_COMPILE_CACHE")
	n := 0
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err == nil {
		n, _ = strconv.Atoi(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		n = -1
	}
	werr := os.WriteFile(filepath.Join(dir, "runs"), []byte(strconv.Itoa(n+1)), 0o600)
	text := fmt.Sprintf("cache %s: runs before %d, written %v", dir, n, werr == nil)
	err = a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: text},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// TestConfinedAgentCompileCacheLasts: pi-acp confined gets its node
// compile cache in a directory of its profile that it can write and that
// the next confined run finds again (in the private TMPDIR, node's
// default, every confined run compiled pi afresh); acpterm's own
// NODE_COMPILE_CACHE, which unconfined programs use, is neither followed
// nor written; an unconfined agent keeps the variable as it was.
func TestConfinedAgentCompileCacheLasts(t *testing.T) {
	t.Parallel()
	home, cache, hostCache := t.TempDir(), t.TempDir(), t.TempDir()
	bin := t.TempDir()
	// Named pi-acp, the test binary gets pi's profile.
	if err := os.Symlink(testExe(t), filepath.Join(bin, "pi-acp")); err != nil {
		t.Fatal(err)
	}
	env := []string{fakeAgentEnv + "=compile-cache", "HOME=" + home, "XDG_CACHE_HOME=" + cache, "NODE_COMPILE_CACHE=" + hostCache}
	want := filepath.Join(cache, "acpterm", "node-compile-cache", "pi-acp")
	for i, wantLine := range []string{
		fmt.Sprintf("cache %s: runs before 0, written true", want),
		fmt.Sprintf("cache %s: runs before 1, written true", want),
	} {
		r := acpterm(t, opts{plain: true, env: env}, "run", "--approve-all", "--sandbox-agent", "-p", "go", "--", filepath.Join(bin, "pi-acp"))
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, wantLine) {
			t.Errorf("confined run %d: stdout %q, want %q", i, r.stdout, wantLine)
		}
	}
	if exists(filepath.Join(hostCache, "runs")) {
		t.Error("the confined agent wrote in acpterm's own NODE_COMPILE_CACHE")
	}
	r := acpterm(t, opts{plain: true, env: env}, "run", "--approve-all", "--sandbox-agent=false", "-p", "go", "--", filepath.Join(bin, "pi-acp"))
	if line := fmt.Sprintf("cache %s: runs before 0, written true", hostCache); r.code != 0 || !strings.Contains(r.stdout, line) {
		t.Errorf("unconfined: exit %d, stdout %q, want %q", r.code, r.stdout, line)
	}
}
