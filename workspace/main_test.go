package workspace_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/workspace"
)

// A Workspace serves both fs methods, as the package doc says.
var (
	_ acp.FileReader = (*workspace.Workspace)(nil)
	_ acp.FileWriter = (*workspace.Workspace)(nil)
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
