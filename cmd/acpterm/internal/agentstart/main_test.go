package agentstart

import (
	"testing"

	"github.com/acpterm/acpterm/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The confined starts of start_test.go wrap commands.
	sandbox.Init()
	goleak.VerifyTestMain(m)
}
