//go:build linux

package remote_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// TestDeadManKillsWhatIsBeingReleased: a command whose release is waiting
// out its kill grace when the connection ends dies at once with the rest,
// and Serve returns within ShutdownBound, not after the grace.
func TestDeadManKillsWhatIsBeingReleased(t *testing.T) {
	cend, send := pipes(t)
	done := make(chan error, 1)
	go func() {
		done <- remote.Serve(context.Background(), send, &remote.ServerOptions{
			Terminal: &terminal.Options{DefaultCwd: t.TempDir(), KillGrace: time.Minute}})
	}()
	c, err := remote.NewClient(testCtx(t), cend, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = send.Close() }()
	defer c.Close()
	sub, err := c.Subscribe("", "")
	if err != nil {
		t.Fatal(err)
	}
	id := create(t, c, &acp.CreateTerminalRequest{Command: "trap '' TERM; echo ready; while :; do sleep 1; done"})
	pid := 0
	for ready := false; !ready; {
		ev, err := sub.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == terminal.EventCreated {
			pid = ev.Info.PID
		}
		ready = bytes.Contains(ev.Data, []byte("ready"))
	}
	go func() {
		_, _ = c.ReleaseTerminal(context.Background(), &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id})
	}()
	// The release is under way once the terminal is no longer known; its
	// command ignores SIGTERM, so the release waits out the minute.
	for {
		_, err := c.TerminalOutput(testCtx(t), &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
		if err != nil {
			break
		}
	}
	if !processAlive(pid) {
		t.Fatalf("pid %d is gone before the connection ended", pid)
	}
	_ = cend.closeWrite()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(remote.ShutdownBound):
		t.Fatalf("Serve did not return within %v of the end of its input while a release waited out its grace", remote.ShutdownBound)
	}
	if processAlive(pid) {
		t.Errorf("pid %d still runs", pid)
	}
}
