//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/terminal"
)

// Two rows of the terminal benchmarks (terminal/bench_sandbox_test.go:
// BenchmarkWaitBackground and BenchmarkConcurrent50) on the product path:
// an agent times its own terminal/* calls through the real acpterm binary,
// and the benchmark runs the same shell lines with os/exec in the same
// loop, so that machine noise hits both.

const (
	// benchCountEnv tells the wait-background agent how many terminals to
	// run, one after the other.
	benchCountEnv = "ACPTERM_E2E_BENCH_COUNT"

	// waitBackgroundLine leaves a background job holding the output pipe
	// after the shell exits.
	waitBackgroundLine = "sleep 30 & echo started"
	waitBackgroundK    = 20 // terminals per run of the wait-background agent
	concurrentN        = 50 // terminals at once of the concurrent agent
)

func init() {
	registerHostile("bench-wait-background", benchWaitBackgroundAgent)
	registerHostile("bench-concurrent", benchConcurrentAgent)
}

// reply reads the next reply to one of the agent's requests, skipping
// acpterm's requests and notifications, and returns its id and result; an
// error reply is returned as an error.
func (a *rawAgent) reply() (int, json.RawMessage, error) {
	for {
		line, err := a.in.ReadBytes('\n')
		if err != nil {
			return 0, nil, err
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return 0, nil, fmt.Errorf("%v: %.200s", err, line)
		}
		if msg.Method != "" || msg.ID == nil {
			continue
		}
		id, err := strconv.Atoi(string(msg.ID))
		if err != nil {
			return 0, nil, fmt.Errorf("a reply to no request of ours: %.200s", line)
		}
		if msg.Error != nil {
			return id, nil, fmt.Errorf("request %d: error %d: %s", id, msg.Error.Code, msg.Error.Message)
		}
		return id, msg.Result, nil
	}
}

// roundTrip sends one request, the only one outstanding, and returns its
// result.
func (a *rawAgent) roundTrip(id int, method, params string) (json.RawMessage, error) {
	a.send(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	got, res, err := a.reply()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if got != id {
		return nil, fmt.Errorf("%s: a reply to request %d, want %d", method, got, id)
	}
	return res, nil
}

// pipeline writes n requests at once, with ids base+i and params(i), then
// reads their n replies in whatever order they come, and returns the
// results by i and when the last one arrived.
func (a *rawAgent) pipeline(n, base int, method string, params func(i int) string) ([]json.RawMessage, time.Time, error) {
	for i := range n {
		fmt.Fprintf(a.out, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", base+i, method, params(i))
	}
	if err := a.out.Flush(); err != nil {
		return nil, time.Time{}, err
	}
	results := make([]json.RawMessage, n)
	for range n {
		id, res, err := a.reply()
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: %w", method, err)
		}
		i := id - base
		if i < 0 || i >= n || results[i] != nil {
			return nil, time.Time{}, fmt.Errorf("%s: an unexpected reply to request %d", method, id)
		}
		results[i] = res
	}
	return results, time.Now(), nil
}

// checkExited checks a terminal/wait_for_exit result for exit code 0.
func checkExited(res json.RawMessage) error {
	var st struct {
		ExitCode *int `json:"exitCode"`
	}
	if err := json.Unmarshal(res, &st); err != nil || st.ExitCode == nil || *st.ExitCode != 0 {
		return fmt.Errorf("terminal/wait_for_exit: %s, want exit code 0", res)
	}
	return nil
}

// checkOutput checks that a terminal/output result holds want, whole.
func checkOutput(res json.RawMessage, want string) error {
	var out struct {
		Output    string `json:"output"`
		Truncated bool   `json:"truncated"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.Output != want || out.Truncated {
		return fmt.Errorf("terminal/output: %s, want output %q", res, want)
	}
	return nil
}

// benchAgentEnd writes the report, ends the turn and reads until acpterm
// closes its stdin.
func benchAgentEnd(a *rawAgent, promptID, report string) int {
	if err := os.WriteFile(os.Getenv(benchReportEnv), []byte(report), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench agent:", err)
		return 1
	}
	a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, promptID)
	for {
		if _, _, _, err := a.next(false); err != nil {
			return 0
		}
	}
}

// benchWaitBackgroundAgent runs waitBackgroundLine in a terminal
// $ACPTERM_E2E_BENCH_COUNT times, one after the other: create, then
// wait_for_exit, output (which must be complete) and release. It reports
// how long after each create's result the wait's result came.
func benchWaitBackgroundAgent() int {
	a := newRawAgent()
	fail := failAs("bench agent")
	k, err := strconv.Atoi(os.Getenv(benchCountEnv))
	if err != nil || k < 1 {
		return fail(fmt.Errorf("%s=%q: want a count", benchCountEnv, os.Getenv(benchCountEnv)))
	}
	promptID, err := a.handshake()
	if err != nil {
		return fail(err)
	}
	create := fmt.Sprintf(`{"sessionId":"sess_flow","command":"sh","args":["-c",%s]}`, strconv.Quote(waitBackgroundLine))
	var report strings.Builder
	for i := range k {
		id := 10 * (i + 1)
		res, err := a.roundTrip(id, "terminal/create", create)
		if err != nil {
			return fail(err)
		}
		created := time.Now()
		tid, err := terminalID(res)
		if err != nil {
			return fail(err)
		}
		term := `{"sessionId":"sess_flow","terminalId":` + strconv.Quote(tid) + `}`
		res, err = a.roundTrip(id+1, "terminal/wait_for_exit", term)
		if err != nil {
			return fail(err)
		}
		exited := time.Now()
		if err := checkExited(res); err != nil {
			return fail(err)
		}
		if res, err = a.roundTrip(id+2, "terminal/output", term); err != nil {
			return fail(err)
		}
		if err := checkOutput(res, "started\n"); err != nil {
			return fail(err)
		}
		if _, err := a.roundTrip(id+3, "terminal/release", term); err != nil {
			return fail(err)
		}
		fmt.Fprintf(&report, "%d\n", exited.Sub(created).Nanoseconds())
	}
	return benchAgentEnd(a, promptID, report.String())
}

// benchConcurrentAgent pipelines concurrentN terminal/create requests of
// `sh -c 'sleep 0.2; echo N'`, then their wait_for_exit, checks each
// output and releases them all. It reports how long after it wrote the
// first create the last create's result came, and the last wait's.
func benchConcurrentAgent() int {
	a := newRawAgent()
	fail := failAs("bench agent")
	promptID, err := a.handshake()
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	res, created, err := a.pipeline(concurrentN, 1000, "terminal/create", func(i int) string {
		return fmt.Sprintf(`{"sessionId":"sess_flow","command":"sh","args":["-c","sleep 0.2; echo %d"]}`, i)
	})
	if err != nil {
		return fail(err)
	}
	terms := make([]string, concurrentN)
	for i, r := range res {
		tid, err := terminalID(r)
		if err != nil {
			return fail(err)
		}
		terms[i] = `{"sessionId":"sess_flow","terminalId":` + strconv.Quote(tid) + `}`
	}
	term := func(i int) string { return terms[i] }
	res, exited, err := a.pipeline(concurrentN, 2000, "terminal/wait_for_exit", term)
	if err != nil {
		return fail(err)
	}
	for _, r := range res {
		if err := checkExited(r); err != nil {
			return fail(err)
		}
	}
	if res, _, err = a.pipeline(concurrentN, 3000, "terminal/output", term); err != nil {
		return fail(err)
	}
	for i, r := range res {
		if err := checkOutput(r, fmt.Sprintf("%d\n", i)); err != nil {
			return fail(err)
		}
	}
	if _, _, err := a.pipeline(concurrentN, 4000, "terminal/release", term); err != nil {
		return fail(err)
	}
	return benchAgentEnd(a, promptID, fmt.Sprintf("%d\n%d\n", created.Sub(start).Nanoseconds(), exited.Sub(start).Nanoseconds()))
}

// benchRunVariants are the acpterm runs each benchmark compares: the
// default sandbox, and none.
var benchRunVariants = []struct {
	name string
	args []string
}{
	{"sandbox", nil},
	{"sandbox-off", []string{"--sandbox", "off"}},
}

// runBenchAgent runs a timing agent through `acpterm run` (bounded, by
// runBinary) and returns its figures in milliseconds; it fails b with
// acpterm's stderr, where the agent's goes, if the run or the agent did.
func runBenchAgent(b *testing.B, bin, mode, dir string, env, flags []string) []float64 {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	report := filepath.Join(b.TempDir(), "report")
	env = append([]string{fakeAgentEnv + "=" + mode, benchReportEnv + "=" + report}, env...)
	args := append(append([]string{"run"}, flags...), "--approve-all", "-p", "go", "--", exe)
	r := runBinary(b, bin, opts{env: env, dir: dir, dropStdout: true}, args...)
	if r.code != 0 {
		b.Fatalf("acpterm %q: exit %d\nstderr:\n%.3000s", args, r.code, r.stderr)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		b.Fatalf("the agent reported nothing: %v\nstderr:\n%.3000s", err, r.stderr)
	}
	var figures []float64
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("agent report %q: %v", data, err)
		}
		figures = append(figures, ms(time.Duration(n)))
	}
	return figures
}

// BenchmarkRunWaitBackground times, through `acpterm run` with the default
// sandbox and without, terminal/create → wait_for_exit of
// `sh -c 'sleep 30 & echo started'`, whose background job holds the output
// pipe, waitBackgroundK times per run, from the create's result to the
// wait's as the agent sees them ("after-create-ms"). Each iteration also
// runs the same argv waitBackgroundK times with os/exec, its stdout an
// *os.File, from Start's return to Wait's ("exec-after-start-ms"). It
// reports medians.
//
//	go test ./cmd/acpterm -run '^$' -bench RunWaitBackground -benchtime 5x
func BenchmarkRunWaitBackground(b *testing.B) {
	bin := plainAcpterm(b)
	for _, v := range benchRunVariants {
		b.Run(v.name, func(b *testing.B) {
			dir := b.TempDir()
			env := []string{benchCountEnv + "=" + strconv.Itoa(waitBackgroundK)}
			var afters, execs []float64
			for b.Loop() {
				afters = append(afters, runBenchAgent(b, bin, "bench-wait-background", dir, env, v.args)...)
				for range waitBackgroundK {
					execs = append(execs, ms(execWaitBackground(b)))
				}
			}
			if len(afters) != b.N*waitBackgroundK {
				b.Fatalf("%d figures from the agent, want %d", len(afters), b.N*waitBackgroundK)
			}
			b.ReportMetric(median(afters), "after-create-ms")
			b.ReportMetric(median(execs), "exec-after-start-ms")
		})
	}
}

// execWaitBackground runs waitBackgroundLine with os/exec, its stdout an
// *os.File pipe, and returns the time from Start's return to Wait's; then
// it kills the background sleep.
func execWaitBackground(b *testing.B) time.Duration {
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command("sh", "-c", waitBackgroundLine)
	cmd.Stdout = pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	pw.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	after := time.Since(started)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the background sleep
	return after
}

// BenchmarkRunConcurrent50 times, through `acpterm run` with the default
// sandbox and without, an agent that pipelines concurrentN terminal/create
// requests of `sh -c 'sleep 0.2; echo N'`, then their wait_for_exit: from
// writing the first create to the last create's result ("create-ms") and
// to the last wait's ("first-create-to-last-exit-ms"). Each iteration also
// starts the same concurrentN commands at once with os/exec, from the
// first start to the last exit ("exec-ms"). It reports medians, and that
// of the difference per iteration ("extra-over-exec-ms") and of the
// quotient ("ratio": acpterm's time over os/exec's, 1.0 at best); the
// commands themselves take 200 ms.
//
//	go test ./cmd/acpterm -run '^$' -bench RunConcurrent50 -benchtime 5x
func BenchmarkRunConcurrent50(b *testing.B) {
	bin := plainAcpterm(b)
	for _, v := range benchRunVariants {
		b.Run(v.name, func(b *testing.B) {
			dir := b.TempDir()
			// The agent releases none before the last exit: they must all
			// fit under --max-terminals, whose default does.
			flags := v.args
			if terminal.DefaultMaxTerminalsPerSession < concurrentN {
				flags = append([]string{"--max-terminals", strconv.Itoa(concurrentN)}, flags...)
			}
			var creates, exits, execs, extra, ratios []float64
			for b.Loop() {
				e := ms(execConcurrent(b, concurrentN))
				got := runBenchAgent(b, bin, "bench-concurrent", dir, nil, flags)
				if len(got) != 2 {
					b.Fatalf("agent report %v, want 2 figures", got)
				}
				creates, exits, execs = append(creates, got[0]), append(exits, got[1]), append(execs, e)
				extra = append(extra, got[1]-e)
				ratios = append(ratios, got[1]/e)
			}
			b.ReportMetric(median(creates), "create-ms")
			b.ReportMetric(median(exits), "first-create-to-last-exit-ms")
			b.ReportMetric(median(execs), "exec-ms")
			b.ReportMetric(median(extra), "extra-over-exec-ms")
			b.ReportMetric(median(ratios), "ratio")
		})
	}
}

// execConcurrent starts n lines `sleep 0.2; echo N` with `sh -c` at once
// through os/exec, each writing into a pipe it reads, and returns how long
// after the first start the last one exited.
func execConcurrent(b *testing.B, n int) time.Duration {
	start := time.Now()
	var mu sync.Mutex
	var last time.Duration
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var out bytes.Buffer
			cmd := exec.Command("sh", "-c", fmt.Sprintf("sleep 0.2; echo %d", i))
			cmd.Stdout = &out
			if err := cmd.Run(); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			last = max(last, time.Since(start))
			mu.Unlock()
			if want := fmt.Sprintf("%d\n", i); out.String() != want {
				b.Errorf("output %q, want %q", out.String(), want)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return last
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }
