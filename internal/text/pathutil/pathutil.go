// Package pathutil holds the one lexical check that the workspace roots,
// the terminal cwds and the sandbox's paths all need: whether a path lies
// in a directory. Lexical only: the callers resolve symlinks first, and the
// kernel (os.Root, Landlock) enforces what they decide.
package pathutil

import "path/filepath"

// Rel returns path relative to root when path is root or below it: "." or
// a local path (no "..", not absolute). Both must be clean and absolute.
func Rel(path, root string) (string, bool) {
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// Within reports whether path is root or below it; both clean and
// absolute.
func Within(path, root string) bool {
	_, ok := Rel(path, root)
	return ok
}
