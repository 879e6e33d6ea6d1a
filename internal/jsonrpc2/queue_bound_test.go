package jsonrpc2

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
)

// fillWhileBlocked writes line to p until the Conn's reader stops taking it, with the
// worker held in a notification handler, and returns how many were taken; at most limit.
func fillWhileBlocked(t *testing.T, p *wirePeer, line string, limit int) int {
	t.Helper()
	p.send(`{"jsonrpc":"2.0","method":"block"}` + "\n")
	synctest.Wait()
	var last <-chan struct{}
	sent := 0
	for sent < limit {
		last = writeAsync(p.in, line)
		sent++
		synctest.Wait()
		if !isClosed(last) {
			return sent
		}
	}
	return sent
}

// blockingPeer is a wirePeer whose notification handler for "block" waits for release.
func blockingPeer(t *testing.T, release <-chan struct{}) *wirePeer {
	opts := logOpts(t)
	opts.Logf = nil // the flood would fill the log
	opts.MaxQueuedBytes = 1000
	return newWirePeer(t, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "block" {
			<-release
		}
		return nil, nil
	}), opts)
}

// A notification without params still costs what its line holds (here a long method name)
// while it waits behind a slow handler: the reader stops at MaxQueuedBytes.
func TestIncomingQueueBoundWithoutParams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		p := blockingPeer(t, release)
		note := `{"jsonrpc":"2.0","method":"` + strings.Repeat("m", 400) + `"}` + "\n"
		if sent := fillWhileBlocked(t, p, note, 50); sent > 5 {
			t.Errorf("read %d parameterless notifications of 400 bytes with a 1000-byte bound and a blocked handler", sent)
		}
		close(release)
	})
}

// Responses queued behind a slow notification handler count against MaxQueuedBytes, whether
// or not a call of ours has their id: a peer cannot pile them up while the worker is busy.
func TestIncomingQueueBoundResponses(t *testing.T) {
	for name, resp := range map[string]string{
		"result": `{"jsonrpc":"2.0","id":7,"result":"` + strings.Repeat("r", 400) + `"}` + "\n",
		"error":  `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"` + strings.Repeat("e", 400) + `"}}` + "\n",
		"small":  `{"jsonrpc":"2.0","id":7,"result":null}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				p := blockingPeer(t, release)
				if sent := fillWhileBlocked(t, p, resp, 200); sent >= 200 {
					t.Errorf("read %d responses to a call never made with a 1000-byte bound and a blocked handler", sent)
				}
				close(release)
			})
		})
	}
}
