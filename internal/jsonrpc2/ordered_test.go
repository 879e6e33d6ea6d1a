package jsonrpc2

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
)

// CallOrdered's hook runs where the response falls among the notifications: after those read
// before it have been handled, before those read after it are, with the result.
func TestCallOrderedHookInOrder(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			aR, aW, bR, bW := tr.pipes(t)
			var mu sync.Mutex
			var order []string
			note := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, s)
			}
			afterDone := make(chan struct{})
			a := NewConn(aR, aW, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				note(req.Method)
				if req.Method == "after" {
					close(afterDone)
				}
				return nil, nil
			}), logOpts(t))
			peer := make(chan error, 1)
			go func() {
				lines := bufio.NewScanner(bR)
				if !lines.Scan() {
					peer <- io.ErrUnexpectedEOF
					return
				}
				var req struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal(lines.Bytes(), &req)
				_, err := io.WriteString(bW, strings.Join([]string{
					`{"jsonrpc":"2.0","method":"before"}`,
					`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"n":1}}`,
					`{"jsonrpc":"2.0","method":"after"}`,
				}, "\n")+"\n")
				peer <- err
			}()
			var got struct{ N int }
			err := a.CallOrdered(context.Background(), "call", nil, &got, nil, func(res json.RawMessage) {
				note("delivered " + string(res))
			})
			if err != nil || got.N != 1 {
				t.Fatalf("call: %v, %+v", err, got)
			}
			if err := <-peer; err != nil {
				t.Fatal(err)
			}
			<-afterDone
			a.Close()
			bW.Close()
			mu.Lock()
			defer mu.Unlock()
			if want := `before,delivered {"n":1},after`; strings.Join(order, ",") != want {
				t.Errorf("order %q, want %q", strings.Join(order, ","), want)
			}
		})
	}
}
