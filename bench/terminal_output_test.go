package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"
	"time"
)

// benchCase is one configuration measured for both SDKs.
type benchCase struct {
	tr      Transport
	size    int // bytes of terminal output in each result
	callers int // goroutines calling at once
}

func (c benchCase) name() string {
	size := fmt.Sprintf("%dB", c.size)
	if c.size%1024 == 0 {
		size = fmt.Sprintf("%dKiB", c.size/1024)
	}
	return fmt.Sprintf("%s/%s/callers=%d", c.tr.Name, size, c.callers)
}

func cases() []benchCase {
	var cs []benchCase
	for _, tr := range Transports {
		for _, size := range []int{100, 64 << 10} {
			for _, callers := range []int{1, 16} {
				cs = append(cs, benchCase{tr: tr, size: size, callers: callers})
			}
		}
	}
	return cs
}

// BenchmarkTerminalOutput measures the terminal/output round trip of both SDKs in each case.
// The b.N calls of each SDK are made in rounds that alternate between the two (and which goes
// first), so that both see the same machine: on a shared one, the load changes during a run.
// It reports each SDK's calls per second and their ratio, acpterm's over coder's; ns/op is
// the time of both SDKs' calls together.
func BenchmarkTerminalOutput(b *testing.B) {
	for _, c := range cases() {
		b.Run(c.name(), func(b *testing.B) {
			want := TerminalOutput(c.size)
			pairs := make([]Pair, len(SDKs))
			for i, sdk := range SDKs {
				ends, err := c.tr.Open()
				if err != nil {
					b.Fatal(err)
				}
				pairs[i] = sdk.Connect(ends, want)
				b.Cleanup(func() {
					if err := pairs[i].Close(); err != nil {
						b.Errorf("%s: Close: %v", sdk.Name, err)
					}
				})
			}
			ctx := context.Background()
			for i, p := range pairs { // start up what each starts on first use
				if err := Run(ctx, p, c.callers, c.callers, want); err != nil {
					b.Fatalf("%s: %v", SDKs[i].Name, err)
				}
			}

			elapsed := make([]time.Duration, len(pairs))
			rounds := min(b.N, 10)
			done := 0
			b.ResetTimer()
			for r := range rounds {
				n := b.N*(r+1)/rounds - done
				done += n
				for k := range pairs {
					i := k
					if r%2 == 1 {
						i = len(pairs) - 1 - k
					}
					start := time.Now()
					if err := Run(ctx, pairs[i], n, c.callers, want); err != nil {
						b.Fatalf("%s: %v", SDKs[i].Name, err)
					}
					elapsed[i] += time.Since(start)
				}
			}
			b.StopTimer()
			rate := make([]float64, len(pairs))
			for i, sdk := range SDKs {
				rate[i] = float64(b.N) / elapsed[i].Seconds()
				b.ReportMetric(rate[i], sdk.Name+"-req/s")
			}
			b.ReportMetric(rate[0]/rate[1], "ratio")
		})
	}
}

// TestTerminalOutput runs every case of the benchmark once for each SDK: the first call's
// result must be the client's answer, and both SDKs must have written the same bytes, request
// and response; then callers calls at once must all succeed.
func TestTerminalOutput(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			want := TerminalOutput(c.size)
			if len(want.Output) != c.size {
				t.Fatalf("TerminalOutput(%d) has %d bytes", c.size, len(want.Output))
			}
			var request, response [][]byte
			for _, sdk := range SDKs {
				ends, err := c.tr.Open()
				if err != nil {
					t.Fatal(err)
				}
				agentOut, clientOut := &tap{w: ends.AgentW}, &tap{w: ends.ClientW}
				ends.AgentW, ends.ClientW = agentOut, clientOut
				p := sdk.Connect(ends, want)
				got, err := p.TerminalOutput(ctx)
				if err != nil {
					t.Errorf("%s: %v", sdk.Name, err)
				} else if got != want {
					t.Errorf("%s: got %d bytes (truncated %v), want %d (truncated %v); equal prefix %d bytes",
						sdk.Name, len(got.Output), got.Truncated, len(want.Output), want.Truncated, commonPrefix(got.Output, want.Output))
				}
				if err := Run(ctx, p, c.callers, c.callers, want); err != nil {
					t.Errorf("%s: %d callers: %v", sdk.Name, c.callers, err)
				}
				if err := p.Close(); err != nil {
					t.Errorf("%s: Close: %v", sdk.Name, err)
				}
				request = append(request, agentOut.firstLine())
				response = append(response, clientOut.firstLine())
			}
			sameWire(t, "request", request)
			sameWire(t, "response", response)
		})
	}
}

// sameWire checks that every SDK wrote the same line as the first one.
func sameWire(t *testing.T, what string, lines [][]byte) {
	t.Helper()
	var first any
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatalf("%s: the %s is not JSON: %v: %.300q", SDKs[0].Name, what, err, lines[0])
	}
	for i, line := range lines[1:] {
		if bytes.Equal(line, lines[0]) {
			continue
		}
		var v any
		err := json.Unmarshal(line, &v)
		t.Errorf("%s and %s wrote different %ss (the same JSON value: %v)\n%s: %.300q\n%s: %.300q",
			SDKs[0].Name, SDKs[i+1].Name, what, err == nil && reflect.DeepEqual(v, first),
			SDKs[0].Name, lines[0], SDKs[i+1].Name, line)
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// tap keeps a copy of what is written through it.
type tap struct {
	w   io.WriteCloser
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf.Write(p)
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *tap) Close() error { return t.w.Close() }

// firstLine returns the first message written, without its "\n".
func (t *tap) firstLine() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	line, _, _ := bytes.Cut(t.buf.Bytes(), []byte("\n"))
	return bytes.Clone(line)
}
