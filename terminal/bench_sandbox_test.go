//go:build linux

package terminal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/sandbox"
)

// BenchmarkSandbox compares sandboxed terminals (workspace-write through
// the session's spawner, the same with the network denied, and
// workspace-write wrapped command by command as before the spawner) with
// unsandboxed ones in the same run, interleaved so that machine noise hits
// them alike: create → exit → release of `true`; capturing 200 MB of
// output; and 50 terminals created at once, beside 50 bare re-execs of
// the binary. It reports medians: milliseconds per terminal (per batch of
// 50) and their difference from unsandboxed ones, and capture throughput
// as a percentage of the unsandboxed one.
func BenchmarkSandbox(b *testing.B) {
	ws := b.TempDir()
	policies := []struct {
		name string
		sp   *sandbox.Policy
		wrap bool
	}{
		{"off", nil, false},
		{"workspace-write", &sandbox.Policy{Mode: sandbox.WorkspaceWrite}, false},
		{"workspace-write+deny", &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Network: sandbox.DenyNetwork}, false},
		{"workspace-write-wrapped", &sandbox.Policy{Mode: sandbox.WorkspaceWrite}, true},
	}
	names := make([]string, len(policies))
	for i, p := range policies {
		names[i] = p.name
	}
	mgrs := make([]*Manager, len(policies))
	for i, p := range policies {
		mgrs[i] = NewManager(&Options{DefaultCwd: ws, Policy: &Policy{Sandbox: p.sp}})
		mgrs[i].iso.noSpawner = p.wrap
		defer mgrs[i].Close()
	}
	run := func(b *testing.B, m *Manager, req Request) time.Duration {
		start := time.Now()
		if req.SessionID == "" {
			req.SessionID = "bench"
		}
		info, err := m.Create(testCtx(b), req)
		if err != nil {
			b.Fatal(err)
		}
		if st := mustWait(b, m, info); st.ExitCode == nil || *st.ExitCode != 0 {
			b.Fatalf("%s: %v", req.Command, st)
		}
		mustOutput(b, m, info)
		mustRelease(b, m, info)
		return time.Since(start)
	}
	trueReq := Request{Command: "true", Args: []string{"x"}}
	b.Run("lifecycle", func(b *testing.B) {
		times := make([][]float64, len(mgrs))
		for b.Loop() {
			for i, m := range mgrs {
				times[i] = append(times[i], ms(run(b, m, trueReq)))
			}
		}
		reportAgainstFirst(b, names, times, "op")
	})
	b.Run("concurrent50", func(b *testing.B) {
		const n = 50
		batch := func(b *testing.B, m *Manager) time.Duration {
			start := time.Now()
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := trueReq
					req.SessionID = "bench-concurrent"
					run(b, m, req)
				}()
			}
			wg.Wait()
			return time.Since(start)
		}
		bare := func(b *testing.B) time.Duration {
			start := time.Now()
			cmds := make([]*exec.Cmd, n)
			for i := range cmds {
				cmds[i] = exec.Command("/proc/self/exe")
				cmds[i].Env = append(os.Environ(), bareExecEnv+"=1")
				if err := cmds[i].Start(); err != nil {
					b.Fatal(err)
				}
			}
			for _, c := range cmds {
				if err := c.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			return time.Since(start)
		}
		times := make([][]float64, len(mgrs))
		var bares []float64
		for b.Loop() {
			bares = append(bares, ms(bare(b)))
			for i, m := range mgrs {
				times[i] = append(times[i], ms(batch(b, m)))
			}
		}
		b.ReportMetric(median(bares), "bare-reexec-ms/batch")
		reportAgainstFirst(b, names, times, "batch")
	})
	b.Run("capture", func(b *testing.B) {
		limit := uint64(1 << 20)
		req := Request{Command: fmt.Sprintf("head -c %d /dev/zero", captureBytes), OutputByteLimit: &limit}
		ratios := make([][]float64, len(mgrs))
		var base []float64
		for b.Loop() {
			t0 := run(b, mgrs[0], req)
			base = append(base, captureBytes/t0.Seconds()/1e6)
			for i := 1; i < len(mgrs); i++ {
				ratios[i] = append(ratios[i], 100*t0.Seconds()/run(b, mgrs[i], req).Seconds())
			}
		}
		b.ReportMetric(median(base), "off-MB/s")
		for i := 1; i < len(mgrs); i++ {
			b.ReportMetric(median(ratios[i]), policies[i].name+"-%-of-off")
		}
	})
}

// reportAgainstFirst reports the median of each policy's times (ms) per
// unit and, for all but the first, the median of its paired excess over
// the first's.
func reportAgainstFirst(b *testing.B, names []string, times [][]float64, unit string) {
	for i, name := range names {
		b.ReportMetric(median(times[i]), name+"-ms/"+unit)
		if i > 0 {
			diff := make([]float64, len(times[i]))
			for j := range diff {
				diff[j] = times[i][j] - times[0][j]
			}
			b.ReportMetric(median(diff), name+"-extra-ms/"+unit)
		}
	}
}

// BenchmarkWaitBackground measures create → wait_for_exit of
// `sh -c 'sleep 30 & echo started'`, whose background job holds the output
// pipe: the wait must not last the drain window (Options.DrainTimeout).
// Each iteration also runs the same argv with os/exec, its stdout an
// *os.File, so that Wait returns when the shell exits ("exec"). It reports
// medians of the whole and of the part after Create (or Start) returned.
func BenchmarkWaitBackground(b *testing.B) {
	const line = "sleep 30 & echo started"
	m := NewManager(&Options{DefaultCwd: b.TempDir()})
	defer m.Close()
	bare := func() (total, afterStart time.Duration) {
		pr, pw, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer pr.Close()
		cmd := exec.Command("sh", "-c", line)
		cmd.Stdout = pw
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		started := time.Now()
		pw.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the background sleep
		return time.Since(start), time.Since(started)
	}
	var times, afters, bares, bareAfters []float64
	for b.Loop() {
		total, after := bare()
		bares, bareAfters = append(bares, ms(total)), append(bareAfters, ms(after))
		start := time.Now()
		info, err := m.Create(testCtx(b), Request{SessionID: "bench", Command: "sh", Args: []string{"-c", line}})
		if err != nil {
			b.Fatal(err)
		}
		created := time.Now()
		mustWait(b, m, info)
		times, afters = append(times, ms(time.Since(start))), append(afters, ms(time.Since(created)))
		if out := mustOutput(b, m, info); out.Text != "started\n" {
			b.Fatalf("output %q", out.Text)
		}
		mustRelease(b, m, info)
	}
	b.ReportMetric(median(times), "create-to-exit-ms")
	b.ReportMetric(median(afters), "after-create-ms")
	b.ReportMetric(median(bares), "exec-ms")
	b.ReportMetric(median(bareAfters), "exec-after-start-ms")
}

// BenchmarkConcurrent50 creates 50 terminals of `sleep 0.2; echo N` at
// once and waits for each, unsandboxed and through the session's sandbox
// spawner, alternating with the same 50 shell lines started by os/exec
// into pipes ("exec"), so that machine noise hits both alike. It reports
// medians of the time from the first create to the last create's return
// and to the last exit, and the latter's excess over exec's; the commands
// themselves take 200 ms.
func BenchmarkConcurrent50(b *testing.B) {
	const n = 50
	for _, p := range []struct {
		name string
		sp   *sandbox.Policy
	}{
		{"off", nil},
		{"workspace-write", &sandbox.Policy{Mode: sandbox.WorkspaceWrite}},
	} {
		b.Run(p.name, func(b *testing.B) {
			m := NewManager(&Options{DefaultCwd: b.TempDir(), Policy: &Policy{Sandbox: p.sp}})
			defer m.Close()
			var creates, exits, bares, extra []float64
			for b.Loop() {
				be := execBatch(b, n)
				c, e := concurrentBatch(b, m, n)
				creates, exits, bares = append(creates, ms(c)), append(exits, ms(e)), append(bares, ms(be))
				extra = append(extra, ms(e-be))
			}
			b.ReportMetric(median(creates), "create-ms")
			b.ReportMetric(median(exits), "first-create-to-last-exit-ms")
			b.ReportMetric(median(bares), "exec-ms")
			b.ReportMetric(median(extra), "extra-over-exec-ms")
			b.ReportMetric(float64(osThreads(b)), "os-threads")
		})
	}
}

// execBatch starts n shell lines like concurrentBatch's with os/exec and
// the same shell (DefaultShell, $SHELL when it is a POSIX shell), each
// writing into a pipe it reads, and returns how long after the first start
// the last one exited.
func execBatch(b *testing.B, n int) time.Duration {
	shell := DefaultShell()
	start := time.Now()
	var mu sync.Mutex
	var last time.Duration
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			cmd := exec.Command(shell, "-c", fmt.Sprintf("sleep 0.2; echo %d", i))
			cmd.Stdout = &out
			if err := cmd.Run(); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			last = max(last, time.Since(start))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return last
}

// concurrentBatch runs n terminals at once, releases them and returns
// how long after the first create the last create returned and the last
// command exited.
func concurrentBatch(b *testing.B, m *Manager, n int) (created, exited time.Duration) {
	const sess = "bench-concurrent"
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := m.Create(testCtx(b), Request{SessionID: sess, Command: fmt.Sprintf("sleep 0.2; echo %d", i)})
			if err != nil {
				b.Error(err)
				return
			}
			c := time.Since(start)
			if _, err := m.Wait(testCtx(b), sess, info.TerminalID); err != nil {
				b.Error(err)
				return
			}
			e := time.Since(start)
			mu.Lock()
			created, exited = max(created, c), max(exited, e)
			mu.Unlock()
			if out := mustOutput(b, m, info); out.Text != fmt.Sprintf("%d\n", i) {
				b.Errorf("output %q, want %d", out.Text, i)
			}
		}()
	}
	wg.Wait()
	_ = m.ReleaseSession(context.Background(), sess)
	if b.Failed() {
		b.FailNow()
	}
	return created, exited
}

// osThreads is the number of OS threads of this process, which the Go
// runtime never lowers: after a benchmark, the most it needed.
func osThreads(b *testing.B) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no Threads in /proc/self/status")
	return 0
}
