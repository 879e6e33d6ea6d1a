package jsonrpc2

import (
	"context"
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
