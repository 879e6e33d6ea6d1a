//go:build unix

package terminal_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir})
	defer m.Close()
	ctx := context.Background()

	info, err := m.Create(ctx, terminal.Request{SessionID: "s", Command: "echo hello; echo oops >&2; exit 3"})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := m.Wait(ctx, "s", info.TerminalID)
	out, _ := m.Output(ctx, "s", info.TerminalID)
	fmt.Printf("%q, %v\n", out.Text, st)
	_ = m.Release(ctx, "s", info.TerminalID)

	_, err = m.Output(ctx, "s", info.TerminalID)
	fmt.Println("after release:", errors.Is(err, terminal.ErrNotFound))
	// Output:
	// "hello\noops\n", exit 3
	// after release: true
}

func ExampleManager_Subscribe() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir})
	defer m.Close()
	ctx := context.Background()

	sub, _ := m.Subscribe("", "") // every terminal, from now on
	defer sub.Close()
	info, _ := m.Create(ctx, terminal.Request{SessionID: "s", Command: "printf", Args: []string{"%s\n", "a b"}})
	_, _ = m.Wait(ctx, "s", info.TerminalID)
	_ = m.Release(ctx, "s", info.TerminalID)
	for {
		ev, _ := sub.Next(ctx)
		switch ev.Kind {
		case terminal.EventCreated:
			fmt.Printf("created: %s %q\n", ev.Info.Command, ev.Info.Args)
		case terminal.EventOutput:
			fmt.Printf("output: %q\n", ev.Data)
		case terminal.EventExited:
			fmt.Println("exited:", ev.Status)
		case terminal.EventReleased:
			fmt.Println("released")
			return
		}
	}
	// Output:
	// created: printf ["%s\n" "a b"]
	// output: "a b\n"
	// exited: exit 0
	// released
}

// The manager speaks acp's ID types: a session ID from session/new and a
// terminal ID from terminal/create pass to it as they are, and what it
// returns goes into acp messages without conversion.
func ExampleManager_typedIDs() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir})
	defer m.Close()
	ctx := context.Background()

	var sid acp.SessionID = "sess_1" // as session/new answered
	info, err := m.Create(ctx, terminal.Request{SessionID: sid, Command: "echo typed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	var tid acp.TerminalID = info.TerminalID
	embed := acp.Terminal{TerminalID: tid} // the terminal embedded in a tool call
	st, _ := m.Wait(ctx, sid, embed.TerminalID)
	out, _ := m.Output(ctx, sid, tid)
	fmt.Printf("%q, %v, %d live in %s\n", out.Text, st, len(m.Terminals(sid)), sid)
	_ = m.Release(ctx, sid, tid)
	_ = m.ReleaseSession(context.Background(), sid)
	// Output:
	// "typed\n", exit 0, 1 live in sess_1
}
