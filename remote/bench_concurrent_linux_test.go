package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// concurrentN is how many commands the concurrent50 benchmarks start at
// once.
const concurrentN = 50

// benchConcurrent50 is the concurrent50 sub-benchmark of a transport,
// after terminal's BenchmarkConcurrent50: in each iteration, in turn (the
// first of them rotating) so that machine noise hits them alike, the same
// 50 lines `sleep 0.2; echo N` are started at once
//
//   - exec: by os/exec on this host, `shell -c LINE` into a pipe, the floor;
//   - local: through a terminal.Manager in this process, no sandbox, the
//     same shell: its excess over exec is the local one;
//   - remote: through c, whose exec server runs them with --sandbox off
//     and the same shell binary (its --shell),
//
// each waited for, its output checked ("N\n") and released. It reports
// medians: of the time from the first start to the last exit; of the
// excesses over exec and of remote − local, paired by iteration; and
// excess-ratio, the median remote excess over the median local one (the
// target is ≤ 1.2), left out when the local excess is not positive. The
// local excess is a few ms, inside the noise of a busy machine, which
// makes the ratio unsteady: remote-minus-local-ms is the steadier
// measure. shell is the shell's path on this host; a busybox binary runs
// as busybox sh.
//
// targetFloor, when set, measures the floor on the target itself (the
// same 50 by os/exec there, see execFloorEnv) when that is not this
// machine; it runs in each iteration too, and the remote excess over it
// is reported as remote-excess-over-target-ms, with excess-ratio-target
// its median over the local excess.
func benchConcurrent50(b *testing.B, c *remote.Client, shell string, targetFloor func() float64) {
	argv := []string{shell}
	if filepath.Base(shell) == "busybox" {
		argv = append(argv, "sh")
	}
	m := terminal.NewManager(&terminal.Options{DefaultCwd: b.TempDir(), Shell: shell})
	defer m.Close()
	b.Logf("isolation: local %s, remote %s", m.Isolation(), c.Hello().Isolation)
	const sess = "bench-concurrent"
	execRun := func(ctx context.Context, line string) (string, time.Time, error) {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "-c", line)...)
		cmd.Stdout = &out
		err := cmd.Run()
		return out.String(), time.Now(), err
	}
	localRun := func(ctx context.Context, line string) (string, time.Time, error) {
		info, err := m.Create(ctx, terminal.Request{SessionID: sess, Command: line})
		if err != nil {
			return "", time.Time{}, fmt.Errorf("local create: %w", err)
		}
		st, err := m.Wait(ctx, sess, info.TerminalID)
		exited := time.Now()
		if err == nil && st.String() != "exit 0" {
			err = fmt.Errorf("status %v", st)
		}
		out, oerr := m.Output(ctx, sess, info.TerminalID)
		return out.Text, exited, firstErr(err, oerr, m.Release(ctx, sess, info.TerminalID))
	}
	remoteRun := func(ctx context.Context, line string) (string, time.Time, error) {
		resp, err := c.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: sess, Command: line})
		if err != nil {
			return "", time.Time{}, fmt.Errorf("create: %w", err)
		}
		id := resp.TerminalID
		w, err := c.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: sess, TerminalID: id})
		exited := time.Now()
		if err != nil {
			err = fmt.Errorf("wait %s: %w", id, err)
		} else {
			if st := (acp.TerminalExitStatus{ExitCode: w.ExitCode, Signal: w.Signal}); st.String() != "exit 0" {
				err = fmt.Errorf("status %v", st)
			}
		}
		var text string
		out, oerr := c.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: sess, TerminalID: id})
		if oerr == nil {
			text = out.Output
		}
		if oerr != nil {
			oerr = fmt.Errorf("output %s: %w", id, oerr)
		}
		_, rerr := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: sess, TerminalID: id})
		if rerr != nil {
			rerr = fmt.Errorf("release %s: %w", id, rerr)
		}
		return text, exited, firstErr(err, oerr, rerr)
	}
	runs := []func(context.Context, string) (string, time.Time, error){execRun, localRun, remoteRun}
	var execs, locals, remotes, localEx, remoteEx, overLocal, targets, overTarget []float64
	for i := 0; b.Loop(); i++ {
		// Each iteration starts with the next of the three.
		var t [3]float64
		for j := range runs {
			k := (i + j) % len(runs)
			t[k] = batch50(b, runs[k])
		}
		e, l, r := t[0], t[1], t[2]
		execs, locals, remotes = append(execs, e), append(locals, l), append(remotes, r)
		localEx, remoteEx, overLocal = append(localEx, l-e), append(remoteEx, r-e), append(overLocal, r-l)
		if targetFloor != nil {
			f := targetFloor()
			targets, overTarget = append(targets, f), append(overTarget, r-f)
		}
	}
	if targetFloor != nil {
		b.ReportMetric(median(targets), "target-exec-ms")
		b.ReportMetric(median(overTarget), "remote-excess-over-target-ms")
		if lx := median(localEx); lx > 0 {
			b.ReportMetric(median(overTarget)/lx, "excess-ratio-target")
		}
	}
	b.ReportMetric(median(execs), "exec-ms")
	b.ReportMetric(median(locals), "local-ms")
	b.ReportMetric(median(remotes), "remote-ms")
	b.ReportMetric(median(localEx), "local-excess-ms")
	b.ReportMetric(median(remoteEx), "remote-excess-ms")
	b.ReportMetric(median(overLocal), "remote-minus-local-ms")
	if lx := median(localEx); lx > 0 {
		b.ReportMetric(median(remoteEx)/lx, "excess-ratio")
	} else {
		b.Logf("local excess %.1f ms: no excess-ratio", lx)
	}
}

// batch50 runs concurrentN lines `sleep 0.2; echo N` at once, each by run
// in a goroutine of its own, checks that each wrote "N\n", and returns
// the milliseconds from the first start to the last exit. run returns
// the output, when the command was seen to exit, and the first error.
func batch50(b *testing.B, run func(ctx context.Context, line string) (string, time.Time, error)) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var last time.Time
	var wg sync.WaitGroup
	start := time.Now()
	for i := range concurrentN {
		wg.Go(func() {
			out, exited, err := run(ctx, fmt.Sprintf("sleep 0.2; echo %d", i))
			if want := fmt.Sprintf("%d\n", i); err != nil || out != want {
				b.Errorf("command %d: output %q, want %q; %v", i, out, want, err)
				return
			}
			mu.Lock()
			if exited.After(last) {
				last = exited
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return float64(last.Sub(start).Microseconds()) / 1000
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// median is the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// execFloorEnv, set to a shell's path in the environment of this test
// binary, makes it run the 50 lines by os/exec with that shell, print the
// milliseconds from the first start to the last exit, and exit
// (TestMain): the floor measured on a target, a container say, that this
// machine's os/exec does not stand for.
const execFloorEnv = "REMOTE_TEST_EXEC50"

// execFloor runs what execFloorEnv asks for, if it is set: it prints the
// result and exits.
func execFloor() {
	shell := os.Getenv(execFloorEnv)
	if shell == "" {
		return
	}
	ms, err := execFloor50(shell)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ms)
	os.Exit(0)
}

// execFloor50 is what execFloorEnv runs.
func execFloor50(shell string) (float64, error) {
	var mu sync.Mutex
	var last time.Time
	var wg sync.WaitGroup
	errs := make([]error, concurrentN)
	start := time.Now()
	for i := range concurrentN {
		wg.Go(func() {
			var out bytes.Buffer
			cmd := exec.Command(shell, "-c", fmt.Sprintf("sleep 0.2; echo %d", i))
			cmd.Stdout = &out
			if err := cmd.Run(); err != nil || out.String() != fmt.Sprintf("%d\n", i) {
				errs[i] = fmt.Errorf("command %d: output %q: %v", i, out.String(), err)
				return
			}
			now := time.Now()
			mu.Lock()
			if now.After(last) {
				last = now
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := firstErr(errs...); err != nil {
		return 0, err
	}
	return float64(last.Sub(start).Microseconds()) / 1000, nil
}
