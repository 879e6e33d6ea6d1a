package jsonrpc2

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkRoundTrip measures one small call and its response between two Conns.
func BenchmarkRoundTrip(b *testing.B) {
	type params struct {
		SessionID  string `json:"sessionId"`
		TerminalID string `json:"terminalId"`
	}
	p := params{SessionID: "sess_1", TerminalID: "term_1"}
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			a, _ := connPair(b, tr.pipes, nil, echo)
			ctx := context.Background()
			var got params
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Call(ctx, "terminal/output", p, &got); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
		b.Run(tr.name+"-parallel", func(b *testing.B) {
			a, _ := connPair(b, tr.pipes, nil, echo)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(8) // several calls in flight per CPU, as with concurrent tool calls
			b.RunParallel(func(pb *testing.PB) {
				var got params
				for pb.Next() {
					if err := a.Call(ctx, "terminal/output", p, &got); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// countingWriter counts the Writes it takes.
type countingWriter struct{ writes atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.writes.Add(1); return len(p), nil }

// BenchmarkBurst sends 50 notifications from 50 goroutines released at
// once, as the exits of commands that end together are, and reports
// how many Writes each message took: the fewer, the less a relay that
// pays per write (podman's exec stdio) adds to the burst.
func BenchmarkBurst(b *testing.B) {
	const n = 50
	r, pw := io.Pipe()
	defer pw.Close()
	w := &countingWriter{}
	c := NewConn(r, w, HandlerFunc(func(context.Context, *Request) (any, error) { return nil, nil }), nil)
	defer c.Close()
	ctx := context.Background()
	for b.Loop() {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				if err := c.Notify(ctx, "remote/exit", map[string]int{"seq": i}); err != nil {
					b.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	b.ReportMetric(float64(w.writes.Load())/float64(n*b.N), "writes/msg")
}
