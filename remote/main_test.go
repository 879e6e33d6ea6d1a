package remote_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Under -race a binary sleeps a second before it exits; the ssh tests
	// run the built acpterm many times.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	goleak.VerifyTestMain(m)
}
