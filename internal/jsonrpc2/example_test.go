package jsonrpc2_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

func Example() {
	// Two ends of a connection, as an agent's stdin and stdout would be.
	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()

	agent := jsonrpc2.NewConn(agentIn, agentOut, jsonrpc2.HandlerFunc(func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method != "greet" {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "unknown method " + req.Method}
		}
		var p struct{ Name string }
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
		}
		return "hello, " + p.Name, nil
	}), nil)
	defer agent.Close()

	client := jsonrpc2.NewConn(clientIn, clientOut, nil, nil)
	defer client.Close()

	var greeting string
	if err := client.Call(context.Background(), "greet", map[string]string{"name": "Ada"}, &greeting); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(greeting)

	err := client.Call(context.Background(), "shout", nil, nil)
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		fmt.Println(rpcErr.Code, rpcErr.Message)
	}
	// Output:
	// hello, Ada
	// -32601 unknown method shout
}
