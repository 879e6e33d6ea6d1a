//go:build unix

package terminal_test

import (
	"context"
	"fmt"
	"os"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// runOne runs a shell line on rt and returns all it wrote. It is the
// same code whether rt is a *terminal.Manager, as here, or a
// *remote.Client, whose commands run on another machine.
func runOne(ctx context.Context, rt terminal.Runtime, sid acp.SessionID, line string) (string, error) {
	resp, sub, err := rt.CreateTerminalHeld(ctx, &acp.CreateTerminalRequest{SessionID: sid, Command: line})
	if err != nil {
		return "", err
	}
	defer sub.Close()
	defer rt.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: sid, TerminalID: resp.TerminalID})
	var out []byte
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return string(out), err
		}
		out = append(out, ev.Data...) // every byte: the subscription is held
		if ev.Kind == terminal.EventExited {
			return string(out), nil // the output is complete
		}
	}
}

// A Runtime runs commands here (a Manager) or elsewhere (a
// remote.Client, see remote.Connect) with the same calls.
func ExampleRuntime() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	var rt terminal.Runtime = terminal.NewManager(&terminal.Options{DefaultCwd: dir})
	defer rt.Close()
	out, err := runOne(context.Background(), rt, "s", "echo one; echo two >&2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out)
	// Output:
	// one
	// two
}
