package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// Clients under test that are hostile rather than merely broken.

// hugeOutput pads every terminal/output answer with a megabyte in front of
// the real output, as a client may that keeps far more than asked.
type hugeOutput struct{ *terminal.Manager }

const megabyte = 1 << 20

func (h hugeOutput) TerminalOutput(ctx context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	out, err := h.Manager.TerminalOutput(ctx, req)
	if err == nil {
		out.Output = strings.Repeat("x", megabyte) + out.Output
	}
	return out, err
}

// hugeErrors refuses every terminal/create with a megabyte-long message.
type hugeErrors struct{ *terminal.Manager }

func (hugeErrors) CreateTerminal(context.Context, *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	return nil, &acp.Error{Code: acp.CodeInternalError, Message: strings.Repeat("e", megabyte)}
}

// A case's observation is kept in the report, sent in its tool call and
// in the closing message: however much the client answers with, it stays
// a line, not a copy of the answer.
func TestHugeAnswersAreNotKept(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		wrap func(m *terminal.Manager) acp.TerminalHandler
	}{
		{"huge output", func(m *terminal.Manager) acp.TerminalHandler { return hugeOutput{m} }},
		{"huge errors", func(m *terminal.Manager) acp.TerminalHandler { return hugeErrors{m} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			client := &termClient{TerminalHandler: tt.wrap(m), recorder: &recorder{}}
			rep, _ := probe(t, client, m, &Options{Cases: []string{"stdout-and-stderr", "args-verbatim"}})
			for _, c := range rep.Cases {
				if len(c.Observed) > maxObserved+len("…") {
					t.Errorf("%s (%s): observed is %d bytes, want at most %d", c.ID, c.Result, len(c.Observed), maxObserved)
				}
			}
			for _, msg := range client.transcript().messages {
				if len(msg) > 64<<10 {
					t.Errorf("closing message of %d bytes", len(msg))
				}
			}
		})
	}
}

// silentAfterFirst answers the first terminal/create and then leaves every
// later one unanswered until the request is cancelled.
type silentAfterFirst struct {
	*terminal.Manager
	mu      sync.Mutex
	creates int
}

func (s *silentAfterFirst) CreateTerminal(ctx context.Context, req *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	s.mu.Lock()
	s.creates++
	n := s.creates
	s.mu.Unlock()
	if n == 1 {
		return s.Manager.CreateTerminal(ctx, req)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// cwd-absolute removes the directory it made once the case is over; a
// client that stops answering must not hold the run there for ever.
func TestSilentClientDuringCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out the cleanup's time limit")
	}
	t.Parallel()
	m := newManager(t)
	client := &termClient{TerminalHandler: &silentAfterFirst{Manager: m}, recorder: &recorder{}}
	path := filepath.Join(t.TempDir(), "report.json")
	s := connect(t, client, m, &Options{JSONReport: path, Cases: []string{"cwd-absolute"}, CaseTimeout: 200 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := s.cc.Prompt(context.Background(), &acp.PromptRequest{SessionID: s.sid, Prompt: []acp.ContentBlock{&acp.TextContent{Text: "go"}}})
		done <- err
	}()
	// Not a timing assertion: a bound far beyond the case's limit and the
	// cleanup's, so that a hang fails instead of stalling the suite.
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end: the probe waits for an answer that never comes")
	}
	rep := readReport(t, path)
	if len(rep.Cases) != 1 || rep.Cases[0].Result != ResultFail {
		t.Errorf("cases %+v", rep.Cases)
	}
	// The client never ran the rmdir: what the case made is left.
	left, _ := filepath.Glob(filepath.Join(s.cwd, ".acpterm-probe*"))
	for _, d := range left {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Error(err)
		}
	}
}
