//go:build linux

package k8stest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
	"github.com/acpterm/acpterm/terminal"
)

// BenchmarkKubernetes puts the exec server beside kubectl exec alone, in
// one run, on the same pod:
//
//   - first-output: terminal/create of `echo x` → its first output event,
//     on an open exec-server connection; against `kubectl exec -i POD --
//     echo x` → first byte (kubectl has no open connection to reuse: each
//     exec is a new process, a new API request and a new stream);
//   - capture: `cat` of the same 200 MiB file in the container, until its
//     exit event, counting the bytes streamed; against `kubectl exec -i
//     POD -- cat FILE` into a counter.
//
// ACPTERM_K8S=1 go test -run XXX -bench Kubernetes -benchtime 5x . (in k8stest/)
func BenchmarkKubernetes(b *testing.B) {
	optIn(b)
	c := startCluster(b)
	local := acptermBinary(b, b.TempDir())
	p := c.newPod(b, "bench")
	ws := p.workspace(b)
	const capture = 200 << 20
	big := filepath.Join(ws, "200MiB")
	if err := os.WriteFile(big, make([]byte, capture), 0o644); err != nil {
		b.Fatal(err)
	}
	cl, _, _ := dialPod(b, c, p, ws, local, "--sandbox", "off")
	kubectlRun := func(b *testing.B, w io.Writer, argv ...string) time.Duration {
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.kubeconfig, "exec", "-i", "-n", p.Namespace, p.Name, "--"}, argv...)...)
		first, _ := remotetest.FirstByte(b, cmd, w)
		return first
	}

	b.Run("first-output/exec-server", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += remotetest.FirstOutput(b, cl)
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-first-output")
	})
	b.Run("first-output/kubectl-exec", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += kubectlRun(b, io.Discard, "echo", "x")
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-first-output")
	})
	b.Run("capture-200MiB/exec-server", func(b *testing.B) {
		sub, err := cl.Subscribe("")
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		ctx := testCtx(b)
		var got, dropped int64
		var el time.Duration
		for b.Loop() {
			start := time.Now()
			id := create(b, cl, &acp.CreateTerminalRequest{Command: "cat", Args: []string{big}})
			for {
				ev, err := sub.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				got += int64(len(ev.Data))
				dropped += int64(ev.Dropped)
				if ev.Kind == terminal.EventExited {
					break
				}
			}
			el += time.Since(start)
			if _, err := cl.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
				b.Fatal(err)
			}
			drain(b, sub, id)
		}
		b.ReportMetric(float64(capture)*float64(b.N)/(1<<20)/el.Seconds(), "MiB/s-to-exit")
		b.ReportMetric(float64(got)/(1<<20)/el.Seconds(), "MiB/s-streamed")
		b.ReportMetric(float64(dropped)/float64(b.N)/(1<<20), "MiB-dropped/op")
	})
	b.Run("capture-200MiB/kubectl-exec-cat", func(b *testing.B) {
		var el time.Duration
		for b.Loop() {
			var n countWriter
			start := time.Now()
			kubectlRun(b, &n, "cat", big)
			el += time.Since(start)
			if n != capture {
				b.Fatalf("%d bytes", n)
			}
		}
		b.ReportMetric(float64(capture)*float64(b.N)/(1<<20)/el.Seconds(), "MiB/s-streamed")
	})
}

// drain takes a terminal's remaining events, up to its Released.
func drain(b *testing.B, sub *remote.Subscription, id acp.TerminalID) { remotetest.Drain(b, sub, id) }

type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }
