package remotetest

import (
	"context"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestContractInProcess runs Contract on an exec server in this process,
// on this machine (SameMachine): the helpers' own check, with no sshd or
// container, so that they are known sound before a transport is blamed.
func TestContractInProcess(t *testing.T) {
	ws := t.TempDir()
	cend, send := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- remote.Serve(ctx, send, &remote.ServerOptions{Terminal: &terminal.Options{DefaultCwd: ws}})
	}()
	c, err := remote.NewClient(Ctx(t), cend, nil)
	if err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	Contract(t, c, ws, SameMachine{}, &Options{SetsidNeedsCgroup: true})
}
