package display_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
)

// A terminal.Manager is an agent's own terminal runtime for
// RunLocalCommand; the runtime does not import this package, so the check
// is here.
var _ display.LocalTerminals = (*terminal.Manager)(nil)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
