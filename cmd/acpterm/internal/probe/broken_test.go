package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
	"github.com/acpterm/acpterm/terminal"
)

// Deliberately broken clients: the real runtime with one behaviour swapped
// for a mistake seen in real clients. Each must make the matching cases
// fail (or report it, for informational cases) and leave the others alone.

// headKeeper keeps the first outputByteLimit bytes instead of the last,
// cut back to a character start (what Zed does).
type headKeeper struct {
	*terminal.Manager
	mu     sync.Mutex
	limits map[acp.TerminalID]uint64
}

func (h *headKeeper) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	r := *req
	r.OutputByteLimit = nil
	resp, err := h.Manager.CreateTerminal(ctx, &r)
	if err == nil && req.OutputByteLimit != nil {
		h.mu.Lock()
		h.limits[resp.TerminalID] = *req.OutputByteLimit
		h.mu.Unlock()
	}
	return resp, err
}

func (h *headKeeper) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	resp, err := h.Manager.TerminalOutput(ctx, req)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	limit, ok := h.limits[req.TerminalID]
	h.mu.Unlock()
	if ok && uint64(len(resp.Output)) > limit {
		resp.Output, resp.Truncated = utf8cut.Head(resp.Output, int(limit)), true
	}
	return resp, nil
}

// neverWaits never answers wait_for_exit (until the request is cancelled
// or the connection ends).
type neverWaits struct{ *terminal.Manager }

func (neverWaits) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// killedSignals reports a signal death the portable-pty way: a strsignal
// style name and exit code 1.
type killedSignals struct{ *terminal.Manager }

func zedStatus(code *uint32, sig *string) (*uint32, *string) {
	if sig == nil {
		return code, sig
	}
	return acp.Ptr(uint32(1)), acp.Ptr("killed")
}

func (k killedSignals) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	st, err := k.Manager.WaitForTerminalExit(ctx, req)
	if err != nil {
		return nil, err
	}
	st.ExitCode, st.Signal = zedStatus(st.ExitCode, st.Signal)
	return st, nil
}

func (k killedSignals) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	out, err := k.Manager.TerminalOutput(ctx, req)
	if err == nil && out.ExitStatus != nil {
		out.ExitStatus.ExitCode, out.ExitStatus.Signal = zedStatus(out.ExitStatus.ExitCode, out.ExitStatus.Signal)
	}
	return out, err
}

// execOnly execs command directly, so an args-less shell line is not
// found (what acpx did before its fallback).
type execOnly struct{ *terminal.Manager }

func (e execOnly) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	if len(req.Args) == 0 {
		return nil, errors.New("exec: \"" + req.Command + "\": executable file not found in $PATH")
	}
	return e.Manager.CreateTerminal(ctx, req)
}

// resplitter joins command and args into one shell line (what older Zed
// did).
type resplitter struct{ *terminal.Manager }

func (r resplitter) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	q := *req
	q.Command, q.Args = strings.Join(append([]string{req.Command}, req.Args...), " "), nil
	return r.Manager.CreateTerminal(ctx, &q)
}

// keepsReleased treats release as kill: the id stays valid afterwards.
type keepsReleased struct{ *terminal.Manager }

func (k keepsReleased) ReleaseTerminal(ctx context.Context, req *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	if _, err := k.Manager.KillTerminal(ctx, &acp.KillTerminalRequest{SessionID: req.SessionID, TerminalID: req.TerminalID}); err != nil {
		return nil, err
	}
	return &acp.ReleaseTerminalResponse{}, nil
}

// leavesReleased answers terminal/release without doing anything: the
// command runs on and the id stays valid.
type leavesReleased struct{ *terminal.Manager }

func (leavesReleased) ReleaseTerminal(context.Context, *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	return &acp.ReleaseTerminalResponse{}, nil
}

// latestWaitOnly keeps one waiter per terminal: a wait_for_exit that
// arrives while another is pending on the same terminal replaces it, and
// the replaced one is never answered.
type latestWaitOnly struct {
	*terminal.Manager
	mu     sync.Mutex
	latest map[acp.TerminalID]int
}

func (l *latestWaitOnly) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	l.mu.Lock()
	l.latest[req.TerminalID]++
	me := l.latest[req.TerminalID]
	l.mu.Unlock()
	st, err := l.Manager.WaitForTerminalExit(ctx, req)
	l.mu.Lock()
	replaced := l.latest[req.TerminalID] != me
	l.mu.Unlock()
	if replaced {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return st, err
}

// outputBehindWaits serves terminal/output on a terminal only while no
// wait_for_exit is pending on it, as a client that handles one request
// per terminal at a time does.
type outputBehindWaits struct {
	*terminal.Manager
	mu      sync.Mutex
	pending map[acp.TerminalID]int
	changed chan struct{} // closed, and replaced, whenever a wait ends
}

func (o *outputBehindWaits) WaitForTerminalExit(ctx context.Context, req *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	o.mu.Lock()
	o.pending[req.TerminalID]++
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.pending[req.TerminalID]--
		close(o.changed)
		o.changed = make(chan struct{})
		o.mu.Unlock()
	}()
	return o.Manager.WaitForTerminalExit(ctx, req)
}

func (o *outputBehindWaits) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	for {
		o.mu.Lock()
		n, changed := o.pending[req.TerminalID], o.changed
		o.mu.Unlock()
		if n == 0 {
			return o.Manager.TerminalOutput(ctx, req)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// noFIFOs runs commands with a mkfifo that fails, as in a read-only
// workspace.
type noFIFOs struct {
	*terminal.Manager
	path string // PATH, with the failing mkfifo first
}

func newNoFIFOs(t *testing.T, m *terminal.Manager) noFIFOs {
	bin := t.TempDir()
	stub := "#!/bin/sh\necho \"mkfifo: cannot create fifo '$1': Read-only file system\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "mkfifo"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	return noFIFOs{m, bin + string(os.PathListSeparator) + os.Getenv("PATH")}
}

func (n noFIFOs) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	r := *req
	r.Env = append(slices.Clone(req.Env), acp.EnvVariable{Name: "PATH", Value: n.path})
	return n.Manager.CreateTerminal(ctx, &r)
}

// brokenCaseTimeout is the case time of the clients that never answer some
// call. A case spends part of it creating its command and sending its
// calls before the check that times the silence (half of what is left,
// see share), so on a loaded machine 2 s left too little for that check
// and the report named the case's whole time instead of its diagnosis.
const brokenCaseTimeout = 5 * time.Second

// want is what a case of the probe should report of a broken client.
type want struct {
	result   Result
	observed string // a part of Observed
}

// brokenClient is a client runtime with a known fault, and what the
// probe's cases say of it.
type brokenClient struct {
	name    string
	wrap    func(t *testing.T, m *terminal.Manager) acp.TerminalHandler
	timeout time.Duration
	within  time.Duration // the most a probe of its cases may take
	// slow clients make their cases wait out time limits or sleeps: not
	// with -short, and each case in a probe of its own, all at once.
	slow  bool
	cases map[string]want
}

func TestBrokenClients(t *testing.T) {
	t.Parallel()
	tests := []brokenClient{{
		name: "keeps the head of the output",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler {
			return &headKeeper{Manager: m, limits: map[acp.TerminalID]uint64{}}
		},
		cases: map[string]want{
			"tail-truncation-utf8": {ResultFail, "not the end of the output"},
			"truncation-keeps-end": {ResultFail, `kept the beginning "line 1\nline 2`},
			"output-limit-zero":    {ResultPass, ""},
			"exit-status-zero":     {ResultPass, ""},
		},
	}, {
		name: "never answers wait_for_exit",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler { return neverWaits{m} },
		// concurrent-waits spends half of what is left of its time
		// waiting for the three answers, and then asks for the output
		// of two terminals to say why: with 1 s, a loaded machine ran
		// the case out of time there, and its account became the
		// generic one.
		timeout: 2 * time.Second,
		within:  20 * time.Second,
		slow:    true,
		cases: map[string]want{
			"exit-code-nonzero":       {ResultFail, "no answer within 2s to terminal/wait_for_exit"},
			"concurrent-waits":        {ResultFail, "0 answered within"},
			"wait-ignores-grandchild": {ResultFail, "no answer within 2s to terminal/wait_for_exit"},
			"release-invalidates-id":  {ResultFail, "no answer within 2s to terminal/wait_for_exit"},
			"unknown-terminal-id":     {ResultFail, "no answer within 2s to terminal/wait_for_exit"},
			"output-while-running":    {ResultPass, ""},
			"wait-cancel":             {ResultInfo, "with -32800; the command kept running"},
		},
	}, {
		name: "reports signals as killed with exit code 1",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler { return killedSignals{m} },
		cases: map[string]want{
			"signal-reported":       {ResultPass, `signal "killed" with exitCode 1 (an exitCode alongside the signal is tolerated)`},
			"kill-keeps-terminal":   {ResultPass, `signal "killed"`},
			"signal-name-posix":     {ResultInfo, `not a POSIX name: "killed"`},
			"signal-exit-code-null": {ResultInfo, "exitCode 1 reported for a signal death"},
		},
	}, {
		name: "execs args-less commands",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler { return execOnly{m} },
		cases: map[string]want{
			"shell-line":        {ResultInfo, "not run by a shell: terminal/create: error -32603"},
			"args-verbatim":     {ResultPass, ""},
			"exit-code-nonzero": {ResultPass, ""},
		},
	}, {
		name: "re-splits args",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler { return resplitter{m} },
		cases: map[string]want{
			"args-verbatim": {ResultFail, "the command received"},
		},
	}, {
		name: "keeps released ids",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler { return keepsReleased{m} },
		cases: map[string]want{
			"release-invalidates-id": {ResultFail, "after release: output → succeeded"},
			"release-stops-command":  {ResultPass, ""},
		},
	}, {
		name:    "leaves released commands running",
		wrap:    func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler { return leavesReleased{m} },
		timeout: brokenCaseTimeout,
		slow:    true, // concurrent-waits sleeps 2 s
		cases: map[string]want{
			"release-stops-command":  {ResultFail, "the released command kept running"},
			"release-invalidates-id": {ResultFail, "after release: output → succeeded"},
			"concurrent-waits":       {ResultPass, ""},
		},
	}, {
		name: "answers only the latest of concurrent waits",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler {
			return &latestWaitOnly{Manager: m, latest: map[acp.TerminalID]int{}}
		},
		timeout: brokenCaseTimeout,
		slow:    true, // concurrent-waits sleeps 2 s
		cases: map[string]want{
			"concurrent-waits":  {ResultFail, "with 3 waits pending: 1 answered within"},
			"wait-after-exit":   {ResultPass, ""},
			"exit-code-nonzero": {ResultPass, ""},
		},
	}, {
		name: "queues output behind pending waits",
		wrap: func(_ *testing.T, m *terminal.Manager) acp.TerminalHandler {
			return &outputBehindWaits{Manager: m, pending: map[acp.TerminalID]int{}, changed: make(chan struct{})}
		},
		timeout: brokenCaseTimeout,
		slow:    true, // concurrent-waits sleeps 2 s
		cases: map[string]want{
			"concurrent-waits":     {ResultFail, "it seems queued behind them"},
			"output-while-running": {ResultPass, ""},
		},
	}, {
		name: "cannot make FIFOs",
		wrap: func(t *testing.T, m *terminal.Manager) acp.TerminalHandler { return newNoFIFOs(t, m) },
		slow: true,
		cases: map[string]want{
			"concurrent-waits":      {ResultPass, "so the command slept 2 s instead"},
			"release-stops-command": {ResultSkip, "not checked: no FIFO could be made in the session cwd"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.slow && testing.Short() {
				t.Skip("-short: waits out time limits")
			}
			t.Parallel()
			var ids []string
			for _, c := range Cases() {
				if _, ok := tt.cases[c.ID]; ok {
					ids = append(ids, c.ID)
				}
			}
			if !tt.slow {
				probeBroken(t, tt, ids)
				return
			}
			for _, id := range ids {
				t.Run(id, func(t *testing.T) {
					t.Parallel()
					probeBroken(t, tt, []string{id})
				})
			}
		})
	}
}

// probeBroken runs the cases ids against the broken client and checks
// what each reports.
func probeBroken(t *testing.T, tt brokenClient, ids []string) {
	m := newManager(t)
	client := &termClient{TerminalHandler: tt.wrap(t, m), recorder: &recorder{}}
	start := time.Now()
	rep, s := probe(t, client, m, &Options{Cases: ids, CaseTimeout: tt.timeout})
	if tt.within > 0 {
		if d := time.Since(start); d > tt.within {
			t.Errorf("the run took %v, want at most %v", d, tt.within)
		}
	}
	checkSummary(t, rep)
	checkNoFIFOs(t, s.cwd)
	if len(rep.Cases) != len(ids) {
		t.Fatalf("%d cases reported, want %d", len(rep.Cases), len(ids))
	}
	for _, c := range rep.Cases {
		w := tt.cases[c.ID]
		if c.Result != w.result || !strings.Contains(c.Observed, w.observed) {
			t.Errorf("%s: %s %q, want %s with %q", c.ID, c.Result, c.Observed, w.result, w.observed)
		}
	}
}
