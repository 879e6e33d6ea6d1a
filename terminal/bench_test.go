//go:build linux

package terminal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const captureBytes = 200 << 20

// BenchmarkCapture measures output capture against a plain pipe into cat,
// both fed by the same generator: "terminal" runs GEN as a terminal with a
// 1 MiB limit, "sh-pipe-cat" runs sh -c 'GEN | cat > /dev/null', and
// "ratio" alternates the two so that machine noise hits both alike, and
// reports medians.
func BenchmarkCapture(b *testing.B) {
	gens := []struct{ name, cmd string }{
		{"zero", fmt.Sprintf("head -c %d /dev/zero", captureBytes)},
		{"text", fmt.Sprintf("yes 'héllo wörld ✓ some mixed text, 0123456789' | head -c %d", captureBytes)},
		// Three processes on the machine's cores, as `acpterm run`'s
		// benchmark has (cmd/acpterm, BenchmarkRunCapture).
		{"zero-tr", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", captureBytes)},
	}
	m := NewManager(&Options{DefaultCwd: b.TempDir()})
	defer m.Close()
	limit := uint64(1 << 20)
	capture := func(b *testing.B, cmd string) time.Duration {
		start := time.Now()
		info, err := m.Create(testCtx(b), Request{SessionID: "bench", Command: cmd, OutputByteLimit: &limit})
		if err != nil {
			b.Fatal(err)
		}
		mustWait(b, m, info)
		if out := mustOutput(b, m, info); len(out.Text) < 1<<19 || !out.Truncated {
			b.Fatalf("captured %d bytes", len(out.Text))
		}
		mustRelease(b, m, info)
		return time.Since(start)
	}
	pipe := func(b *testing.B, cmd string) time.Duration {
		start := time.Now()
		if err := exec.Command("/bin/sh", "-c", cmd+" | cat > /dev/null").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	mbps := func(d time.Duration, n int) float64 {
		return float64(n) * captureBytes / d.Seconds() / 1e6
	}
	for _, g := range gens {
		b.Run(g.name+"/terminal", func(b *testing.B) {
			b.SetBytes(captureBytes)
			for b.Loop() {
				capture(b, g.cmd)
			}
		})
		b.Run(g.name+"/sh-pipe-cat", func(b *testing.B) {
			b.SetBytes(captureBytes)
			for b.Loop() {
				pipe(b, g.cmd)
			}
		})
		b.Run(g.name+"/ratio", func(b *testing.B) {
			var terms, cats, ratios []float64
			for b.Loop() {
				tt, ct := capture(b, g.cmd), pipe(b, g.cmd)
				terms = append(terms, mbps(tt, 1))
				cats = append(cats, mbps(ct, 1))
				ratios = append(ratios, 100*ct.Seconds()/tt.Seconds())
			}
			b.ReportMetric(median(terms), "terminal-MB/s")
			b.ReportMetric(median(cats), "cat-MB/s")
			b.ReportMetric(median(ratios), "%-of-cat")
		})
	}
}

// median is robust to the odd run disturbed by other work on the machine.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkLifecycle measures create → wait → output → release of `true`
// beside exec.Command("true").Run(), for each isolation mechanism.
// "overhead" alternates them (default isolation) and reports the
// difference.
func BenchmarkLifecycle(b *testing.B) {
	argv := Request{Command: "true", Args: []string{"x"}} // args present: exec'd directly
	shell := Request{Command: "true"}                     // no args: sh -c true
	lifecycle := func(b *testing.B, m *Manager, req Request) time.Duration {
		start := time.Now()
		req.SessionID = "bench"
		info, err := m.Create(testCtx(b), req)
		if err != nil {
			b.Fatal(err)
		}
		mustWait(b, m, info)
		mustOutput(b, m, info)
		mustRelease(b, m, info)
		return time.Since(start)
	}
	bare := func(b *testing.B) time.Duration {
		start := time.Now()
		if err := exec.Command("true", "x").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.Run("exec.Command", func(b *testing.B) {
		for b.Loop() {
			bare(b)
		}
	})
	for _, iso := range []Isolation{IsolationAuto, IsolationProcScan, IsolationGroup} {
		m := NewManager(&Options{DefaultCwd: b.TempDir(), Isolation: iso})
		name := m.Isolation().String()
		b.Run(name+"/argv", func(b *testing.B) {
			for b.Loop() {
				lifecycle(b, m, argv)
			}
		})
		b.Run(name+"/shell", func(b *testing.B) {
			for b.Loop() {
				lifecycle(b, m, shell)
			}
		})
		if iso == IsolationAuto {
			b.Run(name+"/overhead", func(b *testing.B) {
				var base, av, sh []float64
				for b.Loop() {
					t0 := bare(b)
					base = append(base, ms(t0))
					av = append(av, ms(lifecycle(b, m, argv)-t0))
					sh = append(sh, ms(lifecycle(b, m, shell)-t0))
				}
				b.ReportMetric(median(base), "exec-ms/op")
				b.ReportMetric(median(av), "argv-overhead-ms/op")
				b.ReportMetric(median(sh), "shell-overhead-ms/op")
			})
		}
		m.Close()
	}
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

const rssHelperEnv = "ACPTERM_TERMINAL_RSS_HELPER"

// BenchmarkPeakRSS runs a separate process (this test binary in helper
// mode) that captures N bytes through a Manager with a 1 MiB limit and
// reports its own peak RSS; it must not grow with N.
func BenchmarkPeakRSS(b *testing.B) {
	for _, n := range []int64{200 << 20, 2 << 30} {
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			var peak float64
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), rssHelperEnv+"="+strconv.FormatInt(n, 10))
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("helper: %v\n%s", err, stderr.String())
				}
				kib, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
				if err != nil {
					b.Fatalf("helper printed %q", out)
				}
				peak = max(peak, kib/1024)
			}
			b.SetBytes(n)
			b.ReportMetric(peak, "peak-RSS-MiB")
		})
	}
}

// rssHelper captures n bytes of output with a 1 MiB limit and prints its
// peak RSS in KiB.
func rssHelper(arg string) int {
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir, err := os.MkdirTemp("", "acpterm-rss")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	m := NewManager(&Options{DefaultCwd: dir})
	defer m.Close()
	limit := uint64(1 << 20)
	ctx := context.Background()
	info, err := m.Create(ctx, Request{SessionID: "rss", Command: fmt.Sprintf("head -c %d /dev/zero", n), OutputByteLimit: &limit})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := m.Wait(ctx, "rss", info.TerminalID); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, err := m.Output(ctx, "rss", info.TerminalID)
	if err != nil || len(out.Text) != 1<<20 {
		fmt.Fprintln(os.Stderr, "output:", len(out.Text), err)
		return 1
	}
	if err := m.Release(ctx, "rss", info.TerminalID); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across
	// exec, and Go execs from a vfork sharing the parent's memory, so
	// ru_maxrss would report the benchmark process's own peak.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, line := range strings.Split(string(status), "\n") {
		if kib, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Println(strings.TrimSuffix(strings.TrimSpace(kib), " kB"))
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "no VmHWM in /proc/self/status")
	return 1
}

// bareExecEnv makes the test binary exit as soon as it starts: what a
// sandbox helper costs at least when it is started for each command.
const bareExecEnv = "TERMINAL_TEST_BARE_EXEC"
