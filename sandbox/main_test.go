package sandbox

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// actEnv makes the test binary, started as the final command of a
// sandboxed run, perform one action and print its result (see runAct).
const actEnv = "SANDBOX_TEST_ACT"

func TestMain(m *testing.M) {
	// First, as in a host program: the test binary is also the helper.
	Init()
	if os.Getenv(actEnv) != "" {
		os.Exit(runAct(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
