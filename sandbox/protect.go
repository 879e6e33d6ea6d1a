package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ProtectedNames are the files and directories of a workspace that
// programs run things from when they open it, with the user's rights:
// shells and git read the dotfiles (a workspace may be the home
// directory), editors run tasks and language servers their folders name
// (.vscode, .idea, .zed), and agents run the hooks, MCP servers, plugins,
// commands and extensions of their project configuration (.claude,
// .mcp.json, .gemini, .codex, .agents, .qwen, .opencode and opencode.json,
// .pi, .omp). The list follows Claude Code's sandbox, which always denies
// writes to the dotfiles, .mcp.json, .vscode, .idea, .claude/commands and
// .claude/agents, and Codex's, which keeps .codex and .agents; here the
// agents' whole project directories are on it, since every file in them
// steers what the agent runs. Names are compared in any case, as
// case-insensitive file systems do.
var ProtectedNames = append(homeNames,
	".gitmodules",
	// editors
	".vscode", ".idea", ".zed",
	// agents
	".claude", ".mcp.json",
	".gemini", ".codex", ".agents", ".qwen",
	".opencode", "opencode.json", "opencode.jsonc",
	".pi", ".omp",
)

// homeNames are the names of ProtectedNames that programs read in the
// home directory only (a shell's rc files, git's, ripgrep's and Claude
// Code's config):
// DefaultProtected reserves them in a root that is the home directory,
// and protects them elsewhere only where they exist. Reserving a missing
// name costs a directory made and removed at every start.
var homeNames = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zprofile", ".zshenv", ".zlogin",
	".gitconfig", ".ripgreprc",
	// npm's user config: its registry is where npx fetches an agent, and
	// node-options or script-shell run code at the user's next npm.
	".npmrc",
	// Claude Code's global config: it lists MCP servers that it runs
	// wherever it starts.
	".claude.json",
}

// fileNames are the names of ProtectedNames that programs open as files.
// A missing one is reserved with a file, not a directory: programs read
// them at start, and some fail on a directory where they look for a file
// (opencode 1.18 will not start with a directory opencode.json in its
// project), where an empty file, or for JSON an empty object
// (placeholderContent), reads as no settings.
var fileNames = append([]string{".gitmodules", ".mcp.json", "opencode.json", "opencode.jsonc"}, homeNames...)

// placeholderIsFile reports whether the placeholder for path, the first
// missing component of a protected path, is an empty file.
func placeholderIsFile(path string) bool {
	base := filepath.Base(path)
	return slices.ContainsFunc(fileNames, func(n string) bool { return strings.EqualFold(n, base) })
}

// placeholderContent is what the file placeholder for path holds: an
// empty JSON object for a JSON file (qwen 0.24 warns of an .mcp.json it
// cannot parse, such as an empty one), an empty server list for
// .mcp.json (of which qwen warns when it lacks "mcpServers"), else
// nothing.
func placeholderContent(path string) string {
	if strings.EqualFold(filepath.Base(path), ".mcp.json") {
		return "{\"mcpServers\":{}}\n"
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".jsonc":
		return "{}\n"
	}
	return ""
}

// protectDepth is how deep below a root DefaultProtected looks for names of
// ProtectedNames that exist: 3 reaches ROOT/a/b/c/.mcp.json, as Claude
// Code's sandbox does.
const protectDepth = 3

// DefaultProtected is the usual Protected list for roots: each name of
// ProtectedNames directly in each root, whether it exists or not (one that
// does not is reserved, see Policy.Protected; the home directory's own
// files only in a root that is the home directory), and those that exist
// there and in the directories up to three levels below, in any case; and the .git of each
// root, which when missing is reserved too (unless Policy.WritableGit), so
// that a command cannot make a root inside a repository a repository of
// its own, whose config the user's next git status there would run. The search does not
// go into .git or node_modules, nor follow symlinks, nor go into a
// protected directory (it is read-only as a whole). A name a command
// creates in a new directory below the root is not protected: the list is
// made before the command runs.
func DefaultProtected(roots ...string) []string {
	var out []string
	for _, root := range roots {
		if !filepath.IsAbs(root) {
			continue
		}
		root = filepath.Clean(root)
		home, _ := os.UserHomeDir()
		for _, n := range ProtectedNames {
			if root == filepath.Clean(home) || !slices.Contains(homeNames, n) {
				out = append(out, filepath.Join(root, n))
			}
		}
		out = append(out, filepath.Join(root, ".git"))
		out = append(out, protectedBelow(root, 0)...)
	}
	return compactPaths(out)
}

// protectedBelow returns the entries of dir (at depth) whose name is one of
// ProtectedNames in any case, and those of its subdirectories down to
// protectDepth.
func protectedBelow(dir string, depth int) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	var out []string
	for _, e := range ents {
		name := e.Name()
		if protectedIndex(name) >= 0 {
			out = append(out, filepath.Join(dir, name))
			continue
		}
		if depth < protectDepth && e.IsDir() && name != ".git" && name != "node_modules" {
			out = append(out, protectedBelow(filepath.Join(dir, name), depth+1)...)
		}
	}
	return out
}

// protectedIndex is the index in ProtectedNames of name, in any case, or -1.
func protectedIndex(name string) int {
	return slices.IndexFunc(ProtectedNames, func(n string) bool { return strings.EqualFold(n, name) })
}

// IsProtectedName reports whether name is one of ProtectedNames, in any
// case.
func IsProtectedName(name string) bool { return protectedIndex(name) >= 0 }

// compactPaths removes repeated paths, keeping the first of each.
func compactPaths(ps []string) []string {
	seen := make(map[string]bool, len(ps))
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
