//go:build unix

package mcpexec_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/acpterm/acpterm/mcpexec"
)

// A client writes requests on the server's input and reads answers from
// its output, one JSON object per line: here, initialize and one
// exec_command.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	srv, err := mcpexec.NewServer(&mcpexec.Options{Cwd: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(context.Background(), &pipeRW{inR, outW, func() { inR.Close(); outW.Close() }})
	}()

	type answer struct {
		ID     int
		Result struct {
			ProtocolVersion string
			Content         []struct{ Text string }
		}
	}
	answers := bufio.NewScanner(outR)
	// next is the answer to the request with id, skipping anything else
	// (a notification, say).
	next := func(id int) (a answer) {
		for answers.Scan() {
			if json.Unmarshal(answers.Bytes(), &a) == nil && a.ID == id {
				return a
			}
		}
		return a
	}
	// As a client does: the answer to initialize before anything else.
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`)
	fmt.Println("protocol", next(1).Result.ProtocolVersion)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo hello; exit 3"}}}`)
	if r := next(2); len(r.Result.Content) > 0 {
		for _, line := range strings.Split(r.Result.Content[0].Text, "\n") {
			if !strings.HasPrefix(line, "Chunk ID") && !strings.HasPrefix(line, "Wall time") {
				fmt.Println(line)
			}
		}
	}
	go io.Copy(io.Discard, outR) // whatever else the server says
	inW.Close()                  // the end of input: the server kills what runs and returns
	fmt.Println("run:", <-done)
	// Output:
	// protocol 2025-06-18
	// Process exited with code 3
	// Output:
	// hello
	//
	// run: <nil>
}
