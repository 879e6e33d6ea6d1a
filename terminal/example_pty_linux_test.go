//go:build linux

package terminal_test

import (
	"context"
	"fmt"
	"os"

	"github.com/acpterm/acpterm/terminal"
)

// A command on a pseudo-terminal: it sees a terminal, and Output returns
// what the screen shows, a progress bar as its last state and no colours.
func ExampleRequest_pty() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir})
	defer m.Close()
	ctx := context.Background()

	info, err := m.Create(ctx, terminal.Request{
		SessionID: "s",
		Command:   `test -t 1 && echo on a terminal; printf '\033[1mfetching\033[0m 10%%\rfetching 100%%\n'; stty size`,
		PTY:       &terminal.Size{Cols: 100, Rows: 30},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := m.Wait(ctx, "s", info.TerminalID)
	out, _ := m.Output(ctx, "s", info.TerminalID)
	fmt.Printf("%q, %v\n", out.Text, st)
	_ = m.Release(ctx, "s", info.TerminalID)
	// Output:
	// "on a terminal\nfetching 100%\n30 100\n", exit 0
}
