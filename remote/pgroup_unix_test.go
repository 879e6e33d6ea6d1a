//go:build unix

package remote

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCommandOwnProcessGroup: the transport Command makes starts in a
// process group of its own, so that a Ctrl-C sent to the caller's
// (the terminal's foreground group) does not reach it.
func TestCommandOwnProcessGroup(t *testing.T) {
	tool := filepath.Join(t.TempDir(), "tool")
	// Stands in for ssh: waits for its stdin to end.
	if err := os.WriteFile(tool, []byte("#!/bin/sh\nexec cat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, err := Command(Target{Kind: SSH, Host: "example.test"}, &CommandOptions{Tool: tool})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := Dial(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pid := cmd.Process.Pid
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if pgid != pid || pgid == syscall.Getpgrp() {
		t.Errorf("the transport (pid %d) is in process group %d, the caller's is %d: want one of its own", pid, pgid, syscall.Getpgrp())
	}
}
