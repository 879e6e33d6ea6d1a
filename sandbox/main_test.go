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
	// Under -race a binary sleeps a second before it exits; the tests
	// re-execute this one (helpers, sandboxed commands) hundreds of times.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}
