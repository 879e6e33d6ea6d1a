package sandbox

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// planEnv carries the helper's plan (JSON) from Wrap to Init in the
// re-executed host binary. Its presence is the marker; the helper removes
// it before exec'ing the command.
const planEnv = "ACPTERM_SANDBOX_PLAN"

// Init must be the first statement of the host program's main. When the
// process was started by Wrap as a sandbox helper, Init applies the
// restrictions and execs the real command in the same process (same pid,
// process group, cgroup, pipes): it never returns, and on failure it writes
// a one-line "sandbox: …" message to stderr and exits with ExitSetupFailed,
// ExitCannotExec or ExitNotFound. Otherwise it returns at once.
//
// Init runs after the package initializers of the host program, so those
// must not start goroutines that touch the filesystem or the network
// expecting to finish.
func Init() {
	initCalled.Store(true)
	// syscall.Getenv, not os.Getenv: it is all that is needed and keeps
	// the common path to a map lookup.
	if s, ok := syscall.Getenv(planEnv); ok {
		helperMain(s) // does not return
	}
}

// fail ends the helper with a one-line message.
func fail(code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	msg = strings.ReplaceAll(msg, "\n", " ")
	fmt.Fprintf(os.Stderr, "sandbox: %s\n", msg)
	os.Exit(code)
}

// withoutEnv returns env without any NAME=… entries.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			continue
		}
		out = append(out, kv)
	}
	return out
}
