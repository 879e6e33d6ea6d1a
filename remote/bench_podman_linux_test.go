package remote_test

import (
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/remote/remotetest"
)

// BenchmarkPodman puts the exec server beside the transport alone, in one
// run, on one container of the test image (busybox), as BenchmarkSSH
// does on sshd. The exec server runs there with --sandbox off and
// --shell /bin/sh (busybox), on one `podman exec -i` connection opened
// before the benchmarks:
//
//   - first-output: terminal/create of `echo x` → its first output event,
//     on the open connection; against a new `podman exec CONTAINER echo x`
//     → its first byte. podman has no connection to reuse: every exec is a
//     new exec session (the API call, conmon, runc exec), so that is the
//     transport's own round trip, and the target (within it + 2 ms) is
//     the exec server's, on its open connection, beside it;
//   - capture-200MiB/text and /binary: 200 MiB (lines of text, or zero
//     bytes) written in the container by producer (this package's test
//     binary, copied in: 64 KiB writes, little CPU, where busybox's head
//     took a sixth of the machine), from create until the client has
//     the exit event and every byte, streamed losslessly; against the
//     same producer run by `podman exec -i CONTAINER sh -c COMMAND`, the
//     transport carrying the command's output alone. The two run in turn,
//     the first of them alternating by iteration; then `podman exec -i
//     CONTAINER cat` fed the same bytes (catThrough), the raw copy the
//     capture target is set against. ratio is the first raw copy's
//     time over the exec server's, ratio-cat the cat's (≥ 0.8 is the
//     target); ns/B-client-cpu is this process's CPU time per byte of the
//     lossless stream (the server's is not read: its PIDs are the
//     container's);
//   - concurrent50: benchConcurrent50 through the exec server in a
//     container given the host's cgroup2 tree (a cgroup per terminal, as
//     locally), whose floor (os/exec) and local Manager run on this host,
//     on the same kernel as the container, with the same busybox
//     (/bin/busybox sh).
//
// go test ./remote -run XXX -bench Podman -benchtime 5x
func BenchmarkPodman(b *testing.B) {
	needPodman(b)
	name := startContainer(b, containerOptions{})
	c, _, _ := dialContainer(b, "podman://"+name+containerWS, remote.CommandOptions{
		ServerArgs: []string{"--sandbox", "off", "--shell", "/bin/sh"},
	})

	b.Run("first-output/exec-server", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += remotetest.FirstOutput(b, c)
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-first-output")
	})
	b.Run("first-output/podman-exec", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			first, _ := podmanRun(b, io.Discard, "exec", name, "echo", "x")
			total += first
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-first-output")
	})
	self := copyTestBinary(b, name)
	for _, bc := range benchCommands {
		b.Run("capture-200MiB/"+bc.name, func(b *testing.B) {
			command := producer(self, bc.name, capture)
			var lossless captured
			var raw, rawCat time.Duration
			remoteFirst := true
			for b.Loop() {
				if remoteFirst {
					lossless.add(captureRemote(b, c, command, true))
				}
				var n countWriter
				start := time.Now()
				podmanRun(b, &n, "exec", "-i", name, "sh", "-c", command)
				raw += time.Since(start)
				if n != capture {
					b.Fatalf("podman exec: %d bytes", n)
				}
				if !remoteFirst {
					lossless.add(captureRemote(b, c, command, true))
				}
				remoteFirst = !remoteFirst
				rawCat += catThrough(b, exec.Command("podman", "exec", "-i", name, "cat"), bc.line, capture)
			}
			if lossless.dropped != 0 {
				b.Fatalf("the lossless stream dropped %d bytes", lossless.dropped)
			}
			total := float64(capture) * float64(b.N)
			mibs := func(d time.Duration) float64 { return total / (1 << 20) / d.Seconds() }
			b.ReportMetric(mibs(lossless.el), "MiB/s-lossless")
			b.ReportMetric(mibs(raw), "MiB/s-podman")
			b.ReportMetric(raw.Seconds()/lossless.el.Seconds(), "ratio")
			b.ReportMetric(mibs(rawCat), "MiB/s-podman-cat")
			b.ReportMetric(rawCat.Seconds()/lossless.el.Seconds(), "ratio-cat")
			b.ReportMetric(float64(lossless.client.Nanoseconds())/total, "ns/B-client-cpu")
		})
	}
	b.Run("concurrent50", func(b *testing.B) {
		// A container with the host's cgroup2 tree, so that the exec
		// server there gives each terminal a cgroup as the local Manager
		// does: the same isolation on both sides (the /proc scan that a
		// container without it falls back to costs more per command).
		name := startContainer(b, containerOptions{cgroup: true})
		c, _, _ := dialContainer(b, "podman://"+name+containerWS, remote.CommandOptions{
			ServerArgs: []string{"--sandbox", "off", "--shell", "/bin/sh"},
		})
		benchConcurrent50(b, c, "/bin/busybox", containerFloor(b, name))
	})
}

// copyTestBinary copies this package's test binary, built static, into
// the container as /tmp/remote.test, and returns that path.
func copyTestBinary(b *testing.B, name string) string {
	bin, err := proctest.GoBuildEnv(b.TempDir(), "remote.test", []string{"CGO_ENABLED=0"}, "test", "-c", "github.com/acpterm/acpterm/remote")
	if err != nil {
		b.Fatal(err)
	}
	const path = "/tmp/remote.test"
	if out, err := exec.Command("podman", "cp", bin, name+":"+path).CombinedOutput(); err != nil {
		b.Fatalf("podman cp: %v\n%s", err, out)
	}
	return path
}

// podmanRun runs podman with args, its stdout copied into w, and returns
// how long after the start its first byte came and how many it wrote.
func podmanRun(b *testing.B, w io.Writer, args ...string) (time.Duration, int64) {
	return remotetest.FirstByte(b, exec.Command("podman", args...), w)
}

// containerFloor returns what measures the concurrent50 floor inside the
// container: this package's test binary (copyTestBinary), run there with
// execFloorEnv (os/exec in the container, its processes paying what the
// container's do: its seccomp filter, its cgroups).
func containerFloor(b *testing.B, name string) func() float64 {
	copyTestBinary(b, name)
	return func() float64 {
		out, err := exec.Command("podman", "exec", "-e", execFloorEnv+"=/bin/sh", name, "/tmp/remote.test").Output()
		if err != nil {
			b.Fatalf("the floor in the container: %v", err)
		}
		ms, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			b.Fatalf("the floor in the container said %q", out)
		}
		return ms
	}
}
