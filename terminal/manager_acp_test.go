//go:build linux

package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
)

func TestACPErrorCodes(t *testing.T) {
	m := newTestManager(t, &Options{Policy: &Policy{
		Decide: func(_ context.Context, info Info) Decision {
			if info.Command == "forbidden" {
				return Deny("not on the allow list")
			}
			return Allow()
		},
	}})
	ctx := testCtx(t)
	_, err := m.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: "term_0123456789abcdef"})
	if acp.ErrorCode(err) != acp.CodeInvalidParams || !errors.Is(err, acp.ErrInvalidParams) || !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown terminal: %v (code %d)", err, acp.ErrorCode(err))
	}
	if want := `invalid params: terminal "term_0123456789abcdef" not found`; acp.WireError(err).Message != want {
		t.Errorf("wire message %q, want %q", acp.WireError(err).Message, want)
	}
	rel := "rel"
	_, err = m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "true", Cwd: &rel})
	if acp.ErrorCode(err) != acp.CodeInvalidParams {
		t.Errorf("relative cwd: %v (code %d)", err, acp.ErrorCode(err))
	}
	_, err = m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "forbidden"})
	if acp.ErrorCode(err) != acp.CodePermissionDenied || !strings.Contains(acp.WireError(err).Message, "not on the allow list") {
		t.Errorf("denied: %v (code %d)", err, acp.ErrorCode(err))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	resp, err := m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.WaitForTerminalExit(cctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: resp.TerminalID})
	if acp.ErrorCode(err) != acp.CodeRequestCancelled {
		t.Errorf("cancelled wait: %v (code %d)", err, acp.ErrorCode(err))
	}
	if _, err := m.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
		t.Fatal(err)
	}
}

// testClient serves terminals with a Manager.
type testClient struct{ *Manager }

func (testClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return nil, errors.New("not used")
}
func (testClient) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

type testAgent struct{}

func (testAgent) Initialize(_ context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: req.ProtocolVersion}, nil
}
func (testAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return nil, errors.New("not used")
}
func (testAgent) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return nil, errors.New("not used")
}
func (testAgent) Cancel(context.Context, *acp.CancelNotification) error { return nil }

// TestOverTheWire drives the manager as an agent would, through a real
// connection: create, a wait cancelled with $/cancel_request, kill,
// output, wait, release.
func TestOverTheWire(t *testing.T) {
	m := newTestManager(t, nil)
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	cc := acp.NewClientConn(testClient{m}, clientIn, clientOut, nil)
	defer cc.Close()
	ac := acp.NewAgentConn(testAgent{}, agentIn, agentOut, nil)
	defer ac.Close()
	ctx := testCtx(t)
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if !ac.ClientCapabilities().Terminal {
		t.Fatal("a client embedding a Manager did not advertise terminals")
	}
	limit := uint64(1 << 10)
	term, err := ac.CreateTerminal(ctx, &acp.CreateTerminalRequest{
		SessionID: "s", Command: "sh", Args: []string{"-c", "echo $GREETING; exec sleep 30"},
		Env: []acp.EnvVariable{{Name: "GREETING", Value: "hello over the wire"}}, OutputByteLimit: &limit,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	// The host's side: wait for the greeting before killing.
	sub, err := m.Subscribe("s", term.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	nextOutput(t, sub)
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := term.WaitForExit(cctx)
		errc <- err
	}()
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled wait returned a status")
	}
	out, err := term.Output(ctx)
	if err != nil || out.ExitStatus != nil {
		t.Fatalf("after a cancelled wait: %+v, %v; want still running", out, err)
	}
	if err := term.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := term.WaitForExit(ctx)
	if err != nil || st.ExitCode != nil || st.Signal == nil || *st.Signal != "SIGTERM" {
		t.Fatalf("wait after kill: %+v, %v", st, err)
	}
	out, err = term.Output(ctx)
	if err != nil || out.Output != "hello over the wire\n" || out.Truncated || out.ExitStatus == nil {
		t.Fatalf("output: %+v, %v", out, err)
	}
	if err := term.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = ac.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: term.ID})
	if acp.ErrorCode(err) != acp.CodeInvalidParams || !strings.Contains(err.Error(), string(term.ID)) {
		t.Fatalf("output after release: %v", err)
	}
}

func TestOutputFitsTheEncodedBound(t *testing.T) {
	const budget = 64 << 10
	m := newTestManager(t, &Options{MaxEncodedOutput: budget})
	ctx := testCtx(t)
	// 32 KiB of control bytes encode to about 192 KiB.
	resp, err := m.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "head -c 32768 /dev/zero | tr '\\0' '\\1'; echo end"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WaitForTerminalExit(ctx, &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: resp.TerminalID}); err != nil {
		t.Fatal(err)
	}
	out, err := m.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: "s", TerminalID: resp.TerminalID})
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := json.Marshal(out.Output)
	if len(enc)-2 > budget || len(enc)-2 < budget-6 {
		t.Errorf("encoded output is %d bytes, want just under %d", len(enc)-2, budget)
	}
	if !out.Truncated || !strings.HasSuffix(out.Output, "\x01end\n") {
		t.Errorf("truncated=%v, output ends %q", out.Truncated, out.Output[max(0, len(out.Output)-8):])
	}
	// The Go API keeps the whole tail.
	full, err := m.Output(ctx, "s", resp.TerminalID)
	if err != nil || len(full.Text) != 32768+4 || full.Truncated {
		t.Errorf("Output: %d bytes, truncated %v, err %v", len(full.Text), full.Truncated, err)
	}
}

func TestFitEncoded(t *testing.T) {
	for _, s := range []string{"", "plain", "a\x01b\"c\\d<e>f&g\u2028h\ti\nj€k🙂", strings.Repeat("\x00é", 100)} {
		for budget := 0; budget <= 6*len(s)+1; budget++ {
			got, cut := fitEncoded(s, budget)
			enc, _ := json.Marshal(got)
			if n := len(enc) - 2; n > budget {
				t.Fatalf("fitEncoded(%q, %d) = %q encodes to %d bytes", s, budget, got, n)
			}
			if !strings.HasSuffix(s, got) || cut != (got != s) || !utf8.ValidString(got) {
				t.Fatalf("fitEncoded(%q, %d) = %q, %v", s, budget, got, cut)
			}
			// One more character would not fit (for these strings the
			// estimate is exact: no \b or \f).
			if cut {
				longer := s[len(s)-len(got)-1:]
				for !utf8.RuneStart(longer[0]) {
					longer = s[len(s)-len(longer)-1:]
				}
				if enc, _ := json.Marshal(longer); len(enc)-2 <= budget {
					t.Fatalf("fitEncoded(%q, %d) cut %q needlessly", s, budget, longer)
				}
			}
		}
	}
}

// BenchmarkFitEncoded: a full 16 MiB terminal/output reply of plain text,
// which an agent polling a large terminal asks for again and again.
func BenchmarkFitEncoded(b *testing.B) {
	s := strings.Repeat("some output of a build, line by line\n", 16<<20/37)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		fitEncoded(s, 16<<20)
	}
}
