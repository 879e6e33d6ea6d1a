package probe

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/utf8cut"
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

func TestBrokenClients(t *testing.T) {
	t.Parallel()
	type want struct {
		result   Result
		observed string // a part of Observed
	}
	tests := []struct {
		name    string
		wrap    func(m *terminal.Manager) acp.TerminalHandler
		timeout time.Duration
		within  time.Duration // the whole run
		cases   map[string]want
	}{{
		name: "keeps the head of the output",
		wrap: func(m *terminal.Manager) acp.TerminalHandler {
			return &headKeeper{Manager: m, limits: map[acp.TerminalID]uint64{}}
		},
		cases: map[string]want{
			"tail-truncation-utf8": {ResultFail, "not the end of the output"},
			"truncation-keeps-end": {ResultFail, `kept the beginning "line 1\nline 2`},
			"output-limit-zero":    {ResultPass, ""},
			"exit-status-zero":     {ResultPass, ""},
		},
	}, {
		name:    "never answers wait_for_exit",
		wrap:    func(m *terminal.Manager) acp.TerminalHandler { return neverWaits{m} },
		timeout: time.Second,
		within:  12 * time.Second,
		cases: map[string]want{
			"exit-code-nonzero":       {ResultFail, "no answer within 1s to terminal/wait_for_exit"},
			"concurrent-waits":        {ResultFail, "no answer within 1s to terminal/wait_for_exit"},
			"wait-ignores-grandchild": {ResultFail, "no answer within 1s to terminal/wait_for_exit"},
			"release-invalidates-id":  {ResultFail, "no answer within 1s to terminal/wait_for_exit"},
			"unknown-terminal-id":     {ResultFail, "no answer within 1s to terminal/wait_for_exit"},
			"output-while-running":    {ResultPass, ""},
			"wait-cancel":             {ResultInfo, "with -32800; the command kept running"},
		},
	}, {
		name: "reports signals as killed with exit code 1",
		wrap: func(m *terminal.Manager) acp.TerminalHandler { return killedSignals{m} },
		cases: map[string]want{
			"signal-reported":       {ResultPass, `signal "killed" with exitCode 1 (an exitCode alongside the signal is tolerated)`},
			"kill-keeps-terminal":   {ResultPass, `signal "killed"`},
			"signal-name-posix":     {ResultInfo, `not a POSIX name: "killed"`},
			"signal-exit-code-null": {ResultInfo, "exitCode 1 reported for a signal death"},
		},
	}, {
		name: "execs args-less commands",
		wrap: func(m *terminal.Manager) acp.TerminalHandler { return execOnly{m} },
		cases: map[string]want{
			"shell-line":        {ResultInfo, "not run by a shell: terminal/create: error -32603"},
			"args-verbatim":     {ResultPass, ""},
			"exit-code-nonzero": {ResultPass, ""},
		},
	}, {
		name: "re-splits args",
		wrap: func(m *terminal.Manager) acp.TerminalHandler { return resplitter{m} },
		cases: map[string]want{
			"args-verbatim": {ResultFail, "the command received"},
		},
	}, {
		name: "keeps released ids",
		wrap: func(m *terminal.Manager) acp.TerminalHandler { return keepsReleased{m} },
		cases: map[string]want{
			"release-invalidates-id": {ResultFail, "after release: output → succeeded"},
			"release-stops-command":  {ResultPass, ""},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			client := &termClient{TerminalHandler: tt.wrap(m), recorder: &recorder{}}
			var ids []string
			for _, c := range Cases() {
				if _, ok := tt.cases[c.ID]; ok {
					ids = append(ids, c.ID)
				}
			}
			start := time.Now()
			rep, _ := probe(t, client, m, &Options{Cases: ids, CaseTimeout: tt.timeout})
			if tt.within > 0 {
				if d := time.Since(start); d > tt.within {
					t.Errorf("the run took %v, want at most %v", d, tt.within)
				}
			}
			checkSummary(t, rep)
			if len(rep.Cases) != len(ids) {
				t.Fatalf("%d cases reported, want %d", len(rep.Cases), len(ids))
			}
			for _, c := range rep.Cases {
				w := tt.cases[c.ID]
				if c.Result != w.result || !strings.Contains(c.Observed, w.observed) {
					t.Errorf("%s: %s %q, want %s with %q", c.ID, c.Result, c.Observed, w.result, w.observed)
				}
			}
		})
	}
}
