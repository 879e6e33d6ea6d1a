package remote_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
	"github.com/acpterm/acpterm/terminal"
)

// BenchmarkSSH puts the exec server beside the transport alone, in one
// run, on the same sshd:
//
//   - first-output: terminal/create of `echo x` → its first output event,
//     on an open exec-server connection; against a new session on an open
//     ControlMaster connection (`ssh -S socket target echo x`) → first byte;
//   - capture-200MiB/text and /binary: 200 MiB (lines of text, or zero
//     bytes) written by producer (this test binary, run on the target,
//     which is this machine), from create until the client has the exit
//     event and every byte. Each iteration captures it four times over the
//     same ControlMaster connection: streamed losslessly
//     (SubscribeHeld, output as attachments); the same with output in
//     JSON (ClientOptions.JSONOutput: text or base64); through the default
//     stream, with a subscriber that keeps up as it can and drops what it
//     cannot; and through `ssh -S socket target COMMAND`, the transport's
//     own raw copy of the command's output; and `ssh -S socket target
//     cat` fed the same bytes (catThrough), the raw copy the capture
//     target is set against, with a process on the far side that
//     relays every byte, as the exec server does. ratio is the lossless
//     stream's MiB/s over the first raw copy's, ratio-cat over the
//     second's, from runs made in turn under the same load; ns/B-*-cpu
//     is the CPU time of the client (this process) and of the exec
//     server per byte of the lossless stream, steadier than MiB/s on a
//     busy machine;
//   - concurrent50: benchConcurrent50 through an exec server started
//     with --sandbox off and --shell /bin/sh, on this same machine, as
//     its floor (os/exec) and local Manager are, with /bin/sh too: the
//     same shell binary on every side.
//
// go test ./remote -run XXX -bench SSH -benchtime 10x
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
		first, _ := remotetest.FirstByte(b, exec.Command("ssh", "-F", e.config, "-S", sock, "target", command), w)
		return first
	}

	b.Run("first-output/exec-server", func(b *testing.B) {
		c, _ := e.dial(b, ws, "--sandbox", "off")
		var total time.Duration
		for b.Loop() {
			total += remotetest.FirstOutput(b, c)
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
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range benchCommands {
		b.Run("capture-200MiB/"+bc.name, func(b *testing.B) {
			command := producer(self, bc.name, capture)
			// Through the ControlMaster connection, as the raw copy goes.
			mux := []string{"-F", e.config, "-S", sock}
			c, _ := e.dialWith(b, ws, nil, mux, "--sandbox", "off")
			cj, _ := e.dialWith(b, ws, &remote.ClientOptions{JSONOutput: true}, mux, "--sandbox", "off")
			var lossless, json, lossy captured
			var raw, rawCat time.Duration
			for b.Loop() {
				lossless.add(captureRemote(b, c, command, true))
				rawCat += catThrough(b, exec.Command("ssh", "-F", e.config, "-S", sock, "target", "cat"), bc.line, capture)
				json.add(captureRemote(b, cj, command, true))
				lossy.add(captureRemote(b, c, command, false))
				var n countWriter
				start := time.Now()
				sshRun(b, command, &n)
				raw += time.Since(start)
				if n != capture {
					b.Fatalf("ssh: %d bytes", n)
				}
			}
			if lossless.dropped != 0 || json.dropped != 0 {
				b.Fatalf("the lossless streams dropped %d and %d bytes", lossless.dropped, json.dropped)
			}
			total := float64(capture) * float64(b.N)
			mibs := func(d time.Duration) float64 { return total / (1 << 20) / d.Seconds() }
			perByte := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / total }
			b.ReportMetric(mibs(lossless.el), "MiB/s-lossless")
			b.ReportMetric(mibs(raw), "MiB/s-ssh")
			b.ReportMetric(raw.Seconds()/lossless.el.Seconds(), "ratio")
			b.ReportMetric(mibs(rawCat), "MiB/s-ssh-cat")
			b.ReportMetric(rawCat.Seconds()/lossless.el.Seconds(), "ratio-cat")
			b.ReportMetric(perByte(lossless.client), "ns/B-client-cpu")
			b.ReportMetric(perByte(lossless.server), "ns/B-server-cpu")
			b.ReportMetric(mibs(json.el), "MiB/s-lossless-json")
			b.ReportMetric(mibs(lossy.el), "MiB/s-default")
			b.ReportMetric(float64(lossy.dropped)/float64(b.N)/(1<<20), "MiB-dropped-default/op")
		})
	}
	b.Run("concurrent50", func(b *testing.B) {
		c, _ := e.dial(b, ws, "--sandbox", "off", "--shell", "/bin/sh")
		benchConcurrent50(b, c, "/bin/sh", nil) // the target is this machine
	})
}

// captured sums the captures of one kind.
type captured struct {
	el             time.Duration // create to exit event
	dropped        uint64
	client, server time.Duration // CPU time of this process and of the exec server
}

func (c *captured) add(d captured) {
	c.el, c.dropped, c.client, c.server = c.el+d.el, c.dropped+d.dropped, c.client+d.client, c.server+d.server
}

// captureRemote runs command through the exec server and takes its
// events until the exit, as a lossless or an ordinary subscriber.
func captureRemote(b *testing.B, c *remote.Client, command string, lossless bool) captured {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subscribe := c.Subscribe
	if lossless {
		subscribe = c.SubscribeHeld
	}
	sub, err := subscribe("", "")
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	var r captured
	start, cpu0 := time.Now(), processCPU()
	id := create(b, c, &acp.CreateTerminalRequest{Command: command})
	var got uint64
	server, serverCPU0 := 0, time.Duration(0)
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Kind == terminal.EventCreated {
			// The exec server replaced the login shell (exec), so it is
			// the command's parent.
			server = parentPID(ev.Info.PID)
			serverCPU0 = pidCPU(server)
		}
		got += uint64(len(ev.Data))
		r.dropped += ev.Dropped
		if ev.Kind == terminal.EventExited {
			break
		}
	}
	r.el, r.client, r.server = time.Since(start), processCPU()-cpu0, pidCPU(server)-serverCPU0
	if got+r.dropped != capture {
		b.Fatalf("%d bytes streamed, %d dropped, of %d", got, r.dropped, capture)
	}
	if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		b.Fatal(err)
	}
	drain(b, sub, id)
	return r
}

// procStat is the fields of /proc/PID/stat after the command name.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func parentPID(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// pidCPU is the user and system time of a process, to its clock tick.
func pidCPU(pid int) time.Duration {
	f := procStat(pid)
	if pid <= 0 || len(f) < 13 {
		return 0
	}
	user, _ := strconv.Atoi(f[11])
	sys, _ := strconv.Atoi(f[12])
	return time.Duration(user+sys) * time.Second / 100 // USER_HZ
}

const capture = 200 << 20

// drain takes a terminal's events up to its Released.
func drain(b *testing.B, sub terminal.Events, id acp.TerminalID) {
	remotetest.Drain(b, sub, id)
}

type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }
