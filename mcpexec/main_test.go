package mcpexec_test

import (
	"os"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The sandboxed tests run the test binary again as the sandbox helper.
	sandbox.Init()
	// Under -race a binary sleeps a second before it exits; every helper
	// would.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}
