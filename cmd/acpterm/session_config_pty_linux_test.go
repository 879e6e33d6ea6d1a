//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTTYWaitingLine: on a TTY, an agent silent for a while gets a live
// "waiting for AGENT · Ns" line, which is gone once it speaks.
func TestTTYWaitingLine(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the line shows after 2 s of silence")
	}
	t.Parallel()
	out, code := runPTY(t, []string{fakeAgentEnv + "=cfg-silent"}, nil, "run", "--no-color", "-p", "go", "--", testExe(t))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	plain := sgr.ReplaceAllString(out, "")
	mustContain(t, "screen", plain, "waiting for "+filepath.Base(testExe(t))+" · 2s", "finally")
	// The live region is erased before the message is written over it.
	i := strings.LastIndex(plain, "waiting for")
	if j := strings.Index(plain[i:], "\x1b[J"); j < 0 || !strings.Contains(plain[i+j:], "finally") {
		t.Fatalf("the waiting line was not cleared before the message:\n%q", plain[i:])
	}
}
