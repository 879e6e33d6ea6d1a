//go:build linux

package terminal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

const ptyCaptureBytes = 64 << 20

// ptyInputs writes the benchmark's outputs to files, so that the program
// on the pty (cat) costs the same whatever it prints: lines of a build,
// with colours now and then, and a progress bar redrawn after CR.
func ptyInputs(b *testing.B) map[string]string {
	dir := b.TempDir()
	var lines, bar strings.Builder
	for i := 0; lines.Len() < ptyCaptureBytes; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&lines, "\x1b[32mok\x1b[0m  \tgithub.com/example/pkg%d\t0.%03ds\n", i, i%1000)
		} else {
			fmt.Fprintf(&lines, "line %d: %s\n", i, strings.Repeat("lorem ipsum ", i%9))
		}
	}
	for i := 0; bar.Len() < ptyCaptureBytes; i++ {
		p := i % 101
		fmt.Fprintf(&bar, "\r\x1b[K\x1b[1mdownloading\x1b[0m [%s%s] %3d%%", strings.Repeat("#", p/2), strings.Repeat(" ", 50-p/2), p)
	}
	files := map[string]string{}
	for name, s := range map[string]string{"lines": lines.String(), "progress": bar.String()} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(s[:ptyCaptureBytes]), 0o644); err != nil {
			b.Fatal(err)
		}
		files[name] = f
	}
	return files
}

// BenchmarkPTYCapture measures a PTY terminal's capture (the screen model
// included) against the pty's own throughput: the same program on a pty
// of the host's whose master is read and discarded by the same read loop.
// "ratio" alternates the two, so that noise hits both alike, and reports
// medians and the most heap a terminal held at the end of a capture,
// beyond what was in use before it (1 MiB limit).
func BenchmarkPTYCapture(b *testing.B) {
	m := NewManager(&Options{DefaultCwd: b.TempDir()})
	defer m.Close()
	limit := uint64(1 << 20)
	var heap float64
	heapInUse := func() float64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapInuse) / (1 << 20)
	}
	capture := func(b *testing.B, file string) time.Duration {
		before := heapInUse()
		start := time.Now()
		info, err := m.Create(testCtx(b), Request{SessionID: "bench", Command: "cat", Args: []string{file}, PTY: &Size{Cols: 120, Rows: 40}, OutputByteLimit: &limit})
		if err != nil {
			b.Fatal(err)
		}
		mustWait(b, m, info)
		if out := mustOutput(b, m, info); len(out.Text) == 0 {
			b.Fatal("captured nothing")
		}
		d := time.Since(start)
		// What the terminal holds at the end: its raw tail, its screen
		// and history, its rendered text.
		heap = max(heap, heapInUse()-before)
		mustRelease(b, m, info)
		return d
	}
	raw := func(b *testing.B, file string) time.Duration {
		start := time.Now()
		master, tty, err := hostPTY()
		if err != nil {
			b.Fatal(err)
		}
		defer master.Close()
		if err := setWinsize(master, Size{Cols: 120, Rows: 40}); err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("cat", file)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		tty.Close()
		var n int
		copyPTY(master, func(p []byte) { n += len(p) }) // ends in EIO once cat has exited
		if err := cmd.Wait(); err != nil || n < ptyCaptureBytes {
			b.Fatalf("cat: %v, %d bytes read", err, n)
		}
		return time.Since(start)
	}
	mbps := func(d time.Duration) float64 { return ptyCaptureBytes / d.Seconds() / 1e6 }
	for name, file := range ptyInputs(b) {
		b.Run(name+"/terminal", func(b *testing.B) {
			b.SetBytes(ptyCaptureBytes)
			for b.Loop() {
				capture(b, file)
			}
		})
		b.Run(name+"/raw-pty", func(b *testing.B) {
			b.SetBytes(ptyCaptureBytes)
			for b.Loop() {
				raw(b, file)
			}
		})
		b.Run(name+"/ratio", func(b *testing.B) {
			var terms, raws, ratios []float64
			heap = 0
			for b.Loop() {
				tt, rt := capture(b, file), raw(b, file)
				terms = append(terms, mbps(tt))
				raws = append(raws, mbps(rt))
				ratios = append(ratios, 100*rt.Seconds()/tt.Seconds())
			}
			b.ReportMetric(median(terms), "terminal-MB/s")
			b.ReportMetric(median(raws), "raw-pty-MB/s")
			b.ReportMetric(median(ratios), "%-of-raw")
			b.ReportMetric(heap, "heap-MiB")
		})
	}
}

// BenchmarkPTYStart measures what a PTY terminal costs beside its
// output: create, wait, output and release of `true`, against the same
// program started on a bare pty whose master is read to its end,
// alternated, as medians in ms.
func BenchmarkPTYStart(b *testing.B) {
	m := NewManager(&Options{DefaultCwd: b.TempDir()})
	defer m.Close()
	var terms, raws []float64
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for b.Loop() {
		start := time.Now()
		info, err := m.Create(testCtx(b), Request{SessionID: "bench", Command: "true", PTY: &Size{Cols: 120, Rows: 40}})
		if err != nil {
			b.Fatal(err)
		}
		mustWait(b, m, info)
		mustOutput(b, m, info)
		mustRelease(b, m, info)
		terms = append(terms, ms(time.Since(start)))

		start = time.Now()
		master, tty, err := hostPTY()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("true")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		tty.Close()
		copyPTY(master, func([]byte) {})
		err = cmd.Wait()
		master.Close()
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, ms(time.Since(start)))
	}
	b.ReportMetric(median(terms), "terminal-ms")
	b.ReportMetric(median(raws), "raw-pty-ms")
}
