package remote_test

import (
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// BenchmarkSSH puts the exec server beside the transport alone, in one
// run, on the same sshd:
//
//   - first-output: terminal/create of `echo x` → its first output event,
//     on an open exec-server connection; against a new session on an open
//     ControlMaster connection (`ssh -S socket target echo x`) → first byte;
//   - capture: a command writing 200 MiB, until its exit event, counting the
//     bytes streamed; against `ssh -S socket target head -c 200M /dev/zero`.
//
// go test ./remote -run XXX -bench SSH -benchtime 20x
func BenchmarkSSH(b *testing.B) {
	e := needSSH(b)
	ws := b.TempDir()
	sock := filepath.Join(b.TempDir(), "master")
	master := exec.Command("ssh", "-F", e.config, "-o", "ControlMaster=yes", "-o", "ControlPath="+sock, "-N", "target")
	if err := master.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = master.Process.Kill(); _ = master.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for exec.Command("ssh", "-F", e.config, "-S", sock, "-O", "check", "target").Run() != nil {
		if time.Now().After(deadline) {
			b.Fatal("the ControlMaster connection did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sshRun := func(b *testing.B, command string, w io.Writer) time.Duration {
		cmd := exec.Command("ssh", "-F", e.config, "-S", sock, "target", command)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		one := make([]byte, 1)
		if _, err := io.ReadFull(out, one); err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		if _, err := io.Copy(w, out); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		return first
	}
	const capture = 200 << 20

	b.Run("first-output/exec-server", func(b *testing.B) {
		c, _ := e.dial(b, ws, "--sandbox", "off")
		sub, err := c.Subscribe("")
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		ctx := testCtx(b)
		var total time.Duration
		for b.Loop() {
			start := time.Now()
			id := create(b, c, &acp.CreateTerminalRequest{Command: "echo", Args: []string{"x"}})
			for {
				ev, err := sub.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if ev.Kind == terminal.EventOutput && ev.TerminalID == id {
					break
				}
			}
			total += time.Since(start)
			if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
				b.Fatal(err)
			}
			drain(b, sub, id)
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-first-output")
	})
	b.Run("first-output/ssh-session", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += sshRun(b, "echo x", io.Discard)
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-first-output")
	})
	b.Run("capture-200MiB/exec-server", func(b *testing.B) {
		c, _ := e.dial(b, ws, "--sandbox", "off")
		sub, err := c.Subscribe("")
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		ctx := testCtx(b)
		var got, dropped int64
		var el time.Duration
		for b.Loop() {
			start := time.Now()
			id := create(b, c, &acp.CreateTerminalRequest{Command: "head", Args: []string{"-c", "209715200", "/dev/zero"}})
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
			if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
				b.Fatal(err)
			}
			drain(b, sub, id)
		}
		b.ReportMetric(float64(capture)*float64(b.N)/(1<<20)/el.Seconds(), "MiB/s-to-exit")
		b.ReportMetric(float64(got)/(1<<20)/el.Seconds(), "MiB/s-streamed")
		b.ReportMetric(float64(dropped)/float64(b.N)/(1<<20), "MiB-dropped/op")
	})
	b.Run("capture-200MiB/ssh-cat", func(b *testing.B) {
		var el time.Duration
		for b.Loop() {
			var n countWriter
			start := time.Now()
			sshRun(b, "head -c 209715200 /dev/zero", &n)
			el += time.Since(start)
			if n+1 != capture {
				b.Fatalf("%d bytes", n+1)
			}
		}
		b.ReportMetric(float64(capture)*float64(b.N)/(1<<20)/el.Seconds(), "MiB/s-streamed")
	})
}

// drain takes a terminal's remaining events, up to its Released.
func drain(b *testing.B, sub *remote.Subscription, id acp.TerminalID) {
	for {
		ev, err := sub.Next(testCtx(b))
		if err != nil {
			b.Fatal(err)
		}
		if ev.Kind == terminal.EventReleased && ev.TerminalID == id {
			return
		}
	}
}

type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }
