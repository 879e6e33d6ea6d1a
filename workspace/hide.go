package workspace

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/acp"
)

// Hide makes fs requests refuse, for reading and writing, the paths of
// hidden and everything below them, except the paths of shown and what is
// below those: real paths, as sandbox.Applied's Hidden (with Redacted) and
// Shown give them for the run's commands, so that an agent cannot read
// through fs/read_text_file what the sandbox hides from the commands.
// Call it before the Workspace serves requests.
func (ws *Workspace) Hide(hidden, shown []string) {
	ws.hidden, ws.shown = slices.Clone(hidden), slices.Clone(shown)
}

// hides reports whether the real path lies in what Hide hid.
func (ws *Workspace) hides(real string) bool {
	return within(real, ws.hidden) && !within(real, ws.shown)
}

// within reports whether path is one of dirs or lies below one.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func hiddenRefusal(path string) error {
	return fmt.Errorf("%w: %q: hidden by the sandbox, which keeps credentials out of reach (acpterm's --readable PATH lets it through)", acp.ErrPermissionDenied, path)
}
