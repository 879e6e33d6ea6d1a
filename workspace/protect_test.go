package workspace_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/workspace"
)

// configWrites are fs/write_text_file requests for files that a later,
// unconfined program runs things from: an agent's hooks and MCP servers,
// an editor's tasks, a shell's rc file, existing or not, at the root and
// deeper, in another case.
var configWrites = []string{
	".claude/settings.json", ".claude/settings.local.json", ".claude/commands/x.md", ".claude/agents/x.md",
	".mcp.json", ".gemini/settings.json", ".codex/config.toml", ".agents/skills/x/SKILL.md",
	".vscode/tasks.json", ".idea/workspace.xml", ".zed/tasks.json",
	".qwen/settings.json", "opencode.json", ".opencode/plugin/x.js", ".pi/extensions/x.ts",
	".bashrc", ".profile", ".zshrc", ".gitconfig", ".gitmodules",
	"sub/.mcp.json", "a/b/c/d/.vscode/tasks.json", ".CLAUDE/settings.json", "sub/.Mcp.Json",
}

// TestWritePolicyConfig: in workspace-write an agent's writes of those
// files are refused, saying why and what allows them, and nothing is
// written; afterwards the user's git status in the workspace, which an
// agent might have made a repository of its own, runs nothing.
// --writable-config and --sandbox off let them be written.
func TestWritePolicyConfig(t *testing.T) {
	outer := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", outer).CombinedOutput(); err != nil {
		t.Skipf("git init: %v\n%s", err, out)
	}
	root := filepath.Join(outer, "ws")
	configDirs(t, root)
	writeFile(t, filepath.Join(root, ".claude/settings.json"), "{}")
	p := &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite}
	for _, rel := range configWrites {
		err := writeIn(t, root, p, rel)
		if got := acp.ErrorCode(err); got != acp.CodePermissionDenied || !strings.Contains(err.Error(), "--writable-config") {
			t.Errorf("write %s: %v (code %d), want code %d naming --writable-config", rel, err, got, acp.CodePermissionDenied)
		}
		if isPlanted(root, rel) {
			t.Errorf("write %s: the file was written", rel)
		}
	}
	// What would make the workspace a repository whose config runs.
	for _, rel := range []string{".git/config", ".git/HEAD"} {
		if err := writeIn(t, root, p, rel); err == nil {
			t.Errorf("write %s: written", rel)
		}
	}
	// The next session: the user's programs find nothing planted.
	if b, _ := os.ReadFile(filepath.Join(root, ".claude/settings.json")); string(b) != "{}" {
		t.Errorf(".claude/settings.json holds %q", b)
	}
	for _, rel := range []string{".mcp.json", ".vscode/tasks.json", ".gemini/settings.json", ".bashrc", ".git"} {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			t.Errorf("%s exists", rel)
		}
	}
	git := exec.Command("git", "status", "--short")
	git.Dir = root
	if out, err := git.CombinedOutput(); err != nil {
		t.Errorf("git status: %v\n%s", err, out)
	}

	for _, tt := range []struct {
		name string
		p    *workspace.WritePolicy
	}{
		{"writable-config", &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite, WritableConfig: true}},
		{"off", &workspace.WritePolicy{Mode: sandbox.Off}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			configDirs(t, root)
			for _, rel := range configWrites {
				if err := writeIn(t, root, tt.p, rel); err != nil || !isPlanted(root, rel) {
					t.Errorf("write %s: %v; want it written", rel, err)
				}
			}
		})
	}
}

// configDirs makes the directories of configWrites (fs/write_text_file
// makes files, not directories), so that only the policy stands in the
// way.
func configDirs(t *testing.T, root string) {
	t.Helper()
	for _, rel := range configWrites {
		mkdir(t, filepath.Dir(filepath.Join(root, rel)))
	}
}
