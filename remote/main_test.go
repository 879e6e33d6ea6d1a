package remote_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	sandbox.Init() // the local sandbox's helper (TestNewcomerClients)
	execFloor()    // a floor measured on a target: see execFloorEnv
	produce()      // a benchmark's producer: see produceEnv
	// Under -race a binary sleeps a second before it exits; the ssh tests
	// run the built acpterm many times.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	code := m.Run()
	stopSSHD()
	removeBuilds()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
