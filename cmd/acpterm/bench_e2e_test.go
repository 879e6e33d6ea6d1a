package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The product path, end to end: the real acpterm binary running an agent
// that has one command write benchSize bytes into a terminal and waits for
// it, beside the same command piped into cat in the same run.

const (
	benchSize  = 200 << 20
	benchLimit = 1 << 20
)

// benchPipeline is the command both sides run.
var benchPipeline = fmt.Sprintf(`head -c %d /dev/zero | tr '\0' a`, benchSize)

// benchCommandEnv, when set, replaces benchPipeline in the agent: with
// `true`, a run measures acpterm's own cost per turn.
const benchCommandEnv = "ACPTERM_E2E_BENCH_COMMAND"

// benchReportEnv names the file a timing agent writes its figures to, in
// nanoseconds, when it succeeded.
const benchReportEnv = "ACPTERM_E2E_BENCH_REPORT"

func init() {
	registerHostile("bench-capture", benchCaptureAgent)
}

// benchCaptureAgent runs benchPipeline in a client terminal with a 1 MiB
// limit (create, then wait_for_exit), and ends the turn.
func benchCaptureAgent() int {
	a := newRawAgent()
	fail := failAs("bench agent")
	promptID, err := a.handshake()
	if err != nil {
		return fail(err)
	}
	command := benchPipeline
	if c := os.Getenv(benchCommandEnv); c != "" {
		command = c
	}
	start := time.Now()
	res, err := a.call(1, "terminal/create", fmt.Sprintf(`{"sessionId":"sess_flow","command":"sh","args":["-c",%s],"outputByteLimit":%d}`,
		strconv.Quote(command), benchLimit))
	if err != nil {
		return fail(err)
	}
	tid, err := terminalID(res)
	if err != nil {
		return fail(err)
	}
	if _, err := a.call(2, "terminal/wait_for_exit", `{"sessionId":"sess_flow","terminalId":`+strconv.Quote(tid)+`}`); err != nil {
		return fail(err)
	}
	if report := os.Getenv(benchReportEnv); report != "" {
		// create → wait, as the agent sees it: the measure.
		if err := os.WriteFile(report, []byte(strconv.FormatInt(time.Since(start).Nanoseconds(), 10)), 0o644); err != nil {
			return fail(err)
		}
	}
	a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, promptID)
	for {
		if _, _, _, err := a.next(false); err != nil {
			return 0
		}
	}
}

// BenchmarkRunCapture times `acpterm run` through a whole turn whose one
// command writes 200 MiB, in text output, in text output on a terminal
// (the live region) and in JSON output, against the same pipeline into
// cat, alternating the two so that machine noise hits both. acpterm's
// stdout goes to /dev/null, as cat's does; on a terminal, the benchmark
// reads the terminal as fast as acpterm writes. "ratio" is cat's time over
// the whole run's (agent start, handshake and shutdown included);
// "wait-ratio" over the time from the agent's terminal/create to the
// answer to its wait_for_exit, as the agent sees it.
//
//	go test ./cmd/acpterm -run '^$' -bench RunCapture -benchtime 5x
func BenchmarkRunCapture(b *testing.B) {
	bin := plainAcpterm(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	report := filepath.Join(dir, "report")
	env := []string{fakeAgentEnv + "=bench-capture", benchReportEnv + "=" + report}
	variants := []struct {
		name string
		time func(b *testing.B, dir string, env []string, name string, args ...string) float64
		args []string
	}{
		{"text", timeCmd, []string{"run", "--approve-all", "-p", "go", "--", exe}},
		{"text-tty", timeOnPTY, []string{"run", "--approve-all", "-p", "go", "--", exe}},
		{"json", timeCmd, []string{"run", "--format", "json", "--approve-all", "-p", "go", "--", exe}},
		// A diagnostic, not the figure to report: without the sandbox
		// helper in between.
		{"text-sandbox-off", timeCmd, []string{"run", "--sandbox", "off", "--approve-all", "-p", "go", "--", exe}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			if v.time == nil {
				b.Skip("no pseudo-terminals here")
			}
			var acp, waits, cat []float64
			for b.Loop() {
				os.Remove(report)
				acp = append(acp, v.time(b, dir, env, bin, v.args...))
				waits = append(waits, readNanos(b, report))
				cat = append(cat, timeCmd(b, dir, nil, "sh", "-c", benchPipeline+" | cat > /dev/null"))
			}
			ma, mw, mc := median(acp), median(waits), median(cat)
			b.ReportMetric(benchSize/ma/1e6, "acpterm-MB/s")
			b.ReportMetric(benchSize/mc/1e6, "cat-MB/s")
			b.ReportMetric(mc/ma, "ratio")
			b.ReportMetric(mc/mw, "wait-ratio")
		})
	}
}

// BenchmarkRunTurn times `acpterm run` through a whole turn whose one
// command is `true`, with the sandbox (the default) and without: what
// acpterm, the agent's start and the sandbox helper cost per run, beside
// `sh -c true` run directly.
//
//	go test ./cmd/acpterm -run '^$' -bench RunTurn -benchtime 20x
func BenchmarkRunTurn(b *testing.B) {
	bin := plainAcpterm(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	env := []string{fakeAgentEnv + "=bench-capture", benchCommandEnv + "=true"}
	var sandboxed, unsandboxed, direct []float64
	for b.Loop() {
		sandboxed = append(sandboxed, timeCmd(b, dir, env, bin, "run", "--approve-all", "-p", "go", "--", exe))
		unsandboxed = append(unsandboxed, timeCmd(b, dir, env, bin, "run", "--sandbox", "off", "--approve-all", "-p", "go", "--", exe))
		direct = append(direct, timeCmd(b, dir, nil, "sh", "-c", "true"))
	}
	b.ReportMetric(median(sandboxed)*1e3, "ms/turn")
	b.ReportMetric(median(unsandboxed)*1e3, "ms/turn-sandbox-off")
	b.ReportMetric(median(direct)*1e3, "ms/sh-true")
}

// terminalID reads a terminal/create result.
func terminalID(res json.RawMessage) (string, error) {
	var term struct {
		TerminalID string `json:"terminalId"`
	}
	if err := json.Unmarshal(res, &term); err != nil || term.TerminalID == "" {
		return "", fmt.Errorf("terminal/create: %s", res)
	}
	return term.TerminalID, nil
}

// timeCmd runs a command to the end, its stdout into /dev/null, and
// returns its wall time in seconds.
func timeCmd(b *testing.B, dir string, env []string, name string, args ...string) float64 {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = devNull, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %q: %v\n%.2000s", name, args, err, stderr.Bytes())
	}
	return time.Since(start).Seconds()
}

// readNanos reads the figure a timing agent reported, in seconds.
func readNanos(b *testing.B, path string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("the agent reported nothing: %v", err)
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		b.Fatalf("agent report %q: %v", data, err)
	}
	return time.Duration(n).Seconds()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// timeOnPTY times a command on a pseudo-terminal, where there are some
// (bench_e2e_pty_linux_test.go); nil elsewhere.
var timeOnPTY func(b *testing.B, dir string, env []string, name string, args ...string) float64
