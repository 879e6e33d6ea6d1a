//go:build unix

package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// A terminal on the target that takes input: its create asks for a stdin
// pipe in _meta (terminal.MetaStdin; terminal.MetaPTY for a pty), and
// Client.Write types into it. The exec server runs in this process here,
// on a socket pair; over ssh it is the same calls.
func ExampleClient_Write() {
	ctx := context.Background()
	here, there := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- remote.Serve(ctx, there, nil) }()
	c, err := remote.NewClient(ctx, here, nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: `read name; echo "hello, $name"`,
		Meta: acp.Meta{terminal.MetaStdin: json.RawMessage("true")}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Write(ctx, "s", resp.TerminalID, []byte("world\n")); err != nil {
		log.Fatal(err)
	}
	if _, err := c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
		log.Fatal(err)
	}
	out, err := c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: resp.TerminalID})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(out.Output)
	_ = c.Close() // releases the terminal; the server then ends
	<-served
	// Output: hello, world
}
