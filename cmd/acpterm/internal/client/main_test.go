package client

import (
	"os"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The confined starts of agent_start_test.go wrap commands.
	sandbox.Init()
	// Run tests re-execute the test binary as a fake agent (agent_test.go).
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	goleak.VerifyTestMain(m)
}

// ptr returns a pointer to v, for the optional fields of requests.
func ptr[T any](v T) *T { return &v }
