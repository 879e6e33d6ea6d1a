package render

import (
	"fmt"

	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// Bounds of a command shown in a question to the user (a permission, a
// terminal login): its first FitHead and last FitTail bytes when it is
// longer than MaxFitCommand. The question must fit on a screen: a command
// of megabytes would scroll its beginning (a "curl … | sh") out of sight
// behind an innocent end, and the user would approve what they cannot see.
const (
	MaxFitCommand = 4 << 10
	FitHead       = 2 << 10
	FitTail       = 1 << 10
)

// FitCommand is cmd, or its two ends and what is left out between them.
func FitCommand(cmd string) string {
	if len(cmd) <= MaxFitCommand {
		return cmd
	}
	head, tail := utf8cut.Head(cmd, FitHead), utf8cut.Tail(cmd, FitTail)
	return fmt.Sprintf("%s\n  … %d bytes of this command are not shown: refuse it unless you trust the agent …\n%s",
		head, len(cmd)-len(head)-len(tail), tail)
}
