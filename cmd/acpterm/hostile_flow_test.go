package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// The flow-control cases of the hostile suite: an agent that makes acpterm
// produce far more output than it reads, and one that sends a huge message.
// acpterm's peak RSS must stay bounded, and the run must end in bounded time.

// floodReportEnv names the file the flood agent writes acpterm's peak RSS to.
const floodReportEnv = "ACPTERM_E2E_FLOOD_REPORT"

const (
	floodCalls = 300
	floodRead  = 5        // replies the flood agent reads before it ends the turn and exits
	floodLimit = 16 << 20 // outputByteLimit of the flooding terminal
	// floodPause is how long the flood agent leaves its stdin unread with
	// 300 replies of 16 MiB owed to it: the scenario itself (a peer that
	// stops reading for a while), not a wait for a state.
	floodPause = time.Second
	hugeSize   = 60 << 20
)

func init() {
	registerHostile("flood", floodAgent)
	registerHostile("huge-message", hugeMessageAgent)
}

// rawAgent speaks JSON-RPC on stdio by hand, so it can pipeline and stop
// reading as no well-behaved SDK would.
type rawAgent struct {
	in  *bufio.Reader
	out *bufio.Writer
}

// failAs is how a raw agent ends on err: it says so on stderr, under
// name, and exits with 1.
func failAs(name string) func(error) int {
	return func(err error) int {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
}

func newRawAgent() *rawAgent {
	return &rawAgent{in: bufio.NewReaderSize(os.Stdin, 1<<20), out: bufio.NewWriterSize(os.Stdout, 1<<20)}
}

func (a *rawAgent) send(format string, args ...any) {
	fmt.Fprintf(a.out, format+"\n", args...)
	a.out.Flush()
}

// next reads one message's envelope: its id and method, and its result when
// want is set; the rest of a long line is read and dropped, never held.
func (a *rawAgent) next(want bool) (id, method string, result json.RawMessage, err error) {
	var head []byte
	var full bytes.Buffer
	for {
		chunk, err := a.in.ReadSlice('\n')
		if len(head) < 4096 {
			head = append(head, chunk[:min(len(chunk), 4096-len(head))]...)
		}
		if want {
			full.Write(chunk)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", "", nil, err
		}
		break
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if want {
		if err := json.Unmarshal(full.Bytes(), &env); err != nil {
			return "", "", nil, err
		}
		return string(env.ID), env.Method, env.Result, nil
	}
	// The envelope acpterm writes starts with jsonrpc and id.
	s := string(head)
	if i := strings.Index(s, `"id":`); i >= 0 {
		rest := s[i+5:]
		if j := strings.IndexAny(rest, ",}"); j >= 0 {
			id = rest[:j]
		}
	}
	if i := strings.Index(s, `"method":"`); i >= 0 {
		rest := s[i+10:]
		method = rest[:strings.IndexByte(rest, '"')]
	}
	return id, method, nil, nil
}

// call sends a request and returns its result, skipping anything else.
func (a *rawAgent) call(id int, method, params string) (json.RawMessage, error) {
	a.send(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	for {
		got, m, res, err := a.next(true)
		if err != nil {
			return nil, err
		}
		if m == "" && got == strconv.Itoa(id) {
			return res, nil
		}
	}
}

// handshake answers initialize, session/new, and returns the id of the
// session/prompt request.
func (a *rawAgent) handshake() (string, error) {
	for {
		id, method, _, err := a.next(false)
		if err != nil {
			return "", err
		}
		switch method {
		case "initialize":
			a.send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}`, id)
		case "session/new":
			a.send(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"sess_flow"}}`, id)
		case "session/prompt":
			return id, nil
		}
	}
}

// acptermPeakRSS reads the peak RSS of the acpterm process above us (the
// sandbox may put a helper in between).
func acptermPeakRSS() (int64, error) {
	pid := os.Getppid()
	for range 4 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, err
		}
		var name string
		var hwm, ppid int64
		for line := range strings.Lines(string(status)) {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "Name":
				name = v
			case "VmHWM":
				hwm, _ = strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			case "PPid":
				ppid, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if strings.HasPrefix(name, "acpterm") {
			return hwm << 10, nil
		}
		pid = int(ppid)
	}
	return 0, fmt.Errorf("no acpterm among our ancestors")
}

func reportPeak() {
	peak, err := acptermPeakRSS()
	msg := strconv.FormatInt(peak, 10)
	if err != nil {
		msg = "error: " + err.Error()
	}
	_ = os.WriteFile(os.Getenv(floodReportEnv), []byte(msg), 0o644)
}

// floodAgent has acpterm run a command that writes 40 MB into a terminal
// kept at 16 MiB, pipelines 300 terminal/output calls (about 5 GB of
// replies), leaves its stdin unread for floodPause, reads floodRead
// replies, ends the turn and exits with the rest still owed.
func floodAgent() int {
	a := newRawAgent()
	fail := failAs("flood agent")
	promptID, err := a.handshake()
	if err != nil {
		return fail(err)
	}
	res, err := a.call(1, "terminal/create", fmt.Sprintf(`{"sessionId":"sess_flow","command":"sh","args":["-c","head -c 40000000 /dev/zero | tr '\\0' a"],"outputByteLimit":%d}`, floodLimit))
	if err != nil {
		return fail(err)
	}
	var term struct {
		TerminalID string `json:"terminalId"`
	}
	if err := json.Unmarshal(res, &term); err != nil || term.TerminalID == "" {
		return fail(fmt.Errorf("terminal/create: %s", res))
	}
	tid := strconv.Quote(term.TerminalID)
	if _, err := a.call(2, "terminal/wait_for_exit", `{"sessionId":"sess_flow","terminalId":`+tid+`}`); err != nil {
		return fail(err)
	}
	for i := range floodCalls {
		fmt.Fprintf(a.out, `{"jsonrpc":"2.0","id":%d,"method":"terminal/output","params":{"sessionId":"sess_flow","terminalId":%s}}`+"\n", 1000+i, tid)
	}
	a.out.Flush()
	time.Sleep(floodPause)
	// Reading all 300 replies (5 GB) would take minutes on a loaded
	// machine; what matters is that acpterm held them back instead of
	// building them up, and that it gets through when the agent goes.
	for got := 0; got < floodRead; {
		_, method, _, err := a.next(false)
		if err != nil {
			return fail(fmt.Errorf("after %d replies: %w", got, err))
		}
		if method == "" {
			got++
		}
	}
	reportPeak()
	a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, promptID)
	return 0
}

// hugeMessageAgent sends one agent_message_chunk of hugeSize bytes of text.
func hugeMessageAgent() int {
	a := newRawAgent()
	promptID, err := a.handshake()
	if err != nil {
		fmt.Fprintln(os.Stderr, "huge-message agent:", err)
		return 1
	}
	a.out.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_flow","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`)
	chunk := strings.Repeat("a", 64<<10)
	for n := 0; n < hugeSize; n += len(chunk) {
		a.out.WriteString(chunk)
	}
	a.send(`"}}}}`)
	// A round trip, so the update has been handled when we measure.
	if _, err := a.call(1, "fs/read_text_file", `{"sessionId":"sess_flow","path":"/nonexistent"}`); err != nil {
		fmt.Fprintln(os.Stderr, "huge-message agent:", err)
	}
	reportPeak()
	a.send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, promptID)
	for {
		if _, _, _, err := a.next(false); err != nil {
			return 0
		}
	}
}

func readPeak(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the agent reported no peak RSS: %v", err)
	}
	peak, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatalf("agent report: %s", b)
	}
	return peak
}

// TestHostileFlowFlood: 300 pipelined terminal/output calls owed 16 MiB
// each, to an agent that stops reading for a while. acpterm stops reading
// and queueing instead of building the replies up, answers as the agent
// reads, and ends promptly when the agent ends the turn and exits.
func TestHostileFlowFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: pipelines 300 calls on a 16 MiB terminal")
	}
	t.Parallel()
	bin := plainAcpterm(t)
	report := filepath.Join(t.TempDir(), "peak")
	r := runBinary(t, bin, opts{env: []string{fakeAgentEnv + "=flood", floodReportEnv + "=" + report}},
		"run", "--format", "text", "--approve-all", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%.2000s", r.code, r.stderr)
	}
	peak := readPeak(t, report)
	t.Logf("acpterm peak RSS %d MiB, run took %v", peak>>20, r.elapsed)
	if peak > 256<<20 {
		t.Errorf("acpterm peak RSS %d MiB, want at most 256 MiB", peak>>20)
	}
}

// TestHostileFlowHugeMessage: a 60 MiB session/update costs acpterm at most
// about three times its size, in either output format.
func TestHostileFlowHugeMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: sends 60 MiB messages")
	}
	t.Parallel()
	bin := plainAcpterm(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "peak")
			r := runBinary(t, bin, opts{env: []string{fakeAgentEnv + "=huge-message", floodReportEnv + "=" + report}, dropStdout: true},
				"run", "--format", format, "--approve-all", "-p", "go", "--", testExe(t))
			if r.code != 0 {
				t.Fatalf("exit %d\nstderr:\n%.2000s", r.code, r.stderr)
			}
			peak := readPeak(t, report)
			t.Logf("acpterm peak RSS %d MiB for a %d MiB message", peak>>20, hugeSize>>20)
			// A small baseline for acpterm itself (a run with a short
			// message peaks at about 15 MiB).
			if peak > 3*hugeSize+32<<20 {
				t.Errorf("acpterm peak RSS %d MiB for a %d MiB message: more than 3x plus a baseline", peak>>20, hugeSize>>20)
			}
		})
	}
}

// plainAcpterm returns an acpterm binary built without the race detector:
// its memory use is what users get (the detector multiplies it), and the
// tests that only check flags and output run it (opts.plain).
func plainAcpterm(t testing.TB) string {
	t.Helper()
	if !raceEnabled {
		return acptermBin
	}
	plainOnce.Do(func() {
		// The same build as interop's (proctest.GoBuild).
		bin, err := proctest.GoBuild(filepath.Dir(acptermBin), "acpterm-plain", "build", acptermPkg)
		if err != nil {
			plainErr = fmt.Errorf("building acpterm without -race: %v", err)
			return
		}
		plainBin = bin
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainBin
}

var (
	plainOnce sync.Once
	plainBin  string
	plainErr  error
)
