package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// inputRecorder serves the input methods by recording them.
type inputRecorder struct {
	mu   sync.Mutex
	got  []string
	fail error
}

func (r *inputRecorder) note(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s)
	return r.fail
}

func (r *inputRecorder) WriteTerminal(_ context.Context, req *acp.WriteTerminalRequest) (*acp.WriteTerminalResponse, error) {
	return nil, r.note("write " + string(req.SessionID) + " " + string(req.TerminalID) + " " + req.Data)
}

func (r *inputRecorder) CloseTerminalStdin(_ context.Context, req *acp.CloseTerminalStdinRequest) (*acp.CloseTerminalStdinResponse, error) {
	return nil, r.note("close " + string(req.TerminalID))
}

func (r *inputRecorder) ResizeTerminal(_ context.Context, req *acp.ResizeTerminalRequest) (*acp.ResizeTerminalResponse, error) {
	return &acp.ResizeTerminalResponse{}, r.note("resize " + string(req.TerminalID) + " " + strings.Repeat("c", int(req.Cols)) + " " + strings.Repeat("r", int(req.Rows)))
}

type recordingInputClient struct {
	*v1Recorder
	*inputRecorder
}

// TestTerminalInputMethods: a client that implements
// TerminalInputHandler advertises acpterm/input and serves the three
// methods, on v1 and v2 connections alike; params that are not an object
// with both ids are refused with -32602 before the handler runs.
func TestTerminalInputMethods(t *testing.T) {
	for _, offer := range []bool{false, true} {
		rec := &inputRecorder{}
		cc, ac := v2Pair(t, newBothAgent(), recordingInputClient{&v1Recorder{}, rec}, &acp.ConnOptions{OfferV2: offer})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cc.Initialize(ctx, nil); err != nil {
			t.Fatal(err)
		}
		want := acp.ProtocolVersion1
		if offer {
			want = acp.ProtocolVersion2
		}
		if cc.ProtocolVersion() != want {
			t.Fatalf("negotiated %v, want %v", cc.ProtocolVersion(), want)
		}
		if !ac.ServesTerminalInput() {
			t.Fatalf("v%d: the agent does not see %s in %s", want, acp.MetaTerminalInput, ac.ClientCapabilities().Meta)
		}
		for _, c := range []struct {
			method, params string
		}{
			{acp.MethodTerminalWrite, `{"sessionId":"s","terminalId":"t","data":"hi\n"}`},
			{acp.MethodTerminalCloseStdin, `{"sessionId":"s","terminalId":"t"}`},
			{acp.MethodTerminalResize, `{"sessionId":"s","terminalId":"t","cols":3,"rows":2}`},
		} {
			res, err := ac.ExtMethod(ctx, c.method, json.RawMessage(c.params))
			if err != nil || string(res) != "{}" {
				t.Errorf("v%d %s: %s, %v; want {}", want, c.method, res, err)
			}
		}
		for _, bad := range []string{`[]`, `"x"`, `null`, `{}`, `{"sessionId":"s"}`, `{"sessionId":1,"terminalId":"t"}`,
			`{"sessionId":"s","terminalId":"t","cols":-1}`, `{"sessionId":"s","terminalId":"t","rows":65536}`} {
			_, err := ac.ExtMethod(ctx, acp.MethodTerminalResize, json.RawMessage(bad))
			if acp.ErrorCode(err) != acp.CodeInvalidParams {
				t.Errorf("v%d resize %s: %v, want -32602", want, bad, err)
			}
		}
		rec.mu.Lock()
		got := strings.Join(rec.got, "|")
		rec.mu.Unlock()
		if w := "write s t hi\n|close t|resize t ccc rr"; got != w {
			t.Errorf("v%d: handler saw %q, want %q", want, got, w)
		}
	}
}

// TestTerminalInputNotServed: without a TerminalInputHandler nothing is
// advertised, the methods are -32601 with a message naming the method,
// and a handle's input methods fail before any round trip.
func TestTerminalInputNotServed(t *testing.T) {
	cc, ac := v2Pair(t, newBothAgent(), &v1Recorder{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cc.Initialize(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ac.ServesTerminalInput() {
		t.Fatal("input advertised by a client that does not serve it")
	}
	_, err := ac.ExtMethod(ctx, acp.MethodTerminalWrite, json.RawMessage(`{"sessionId":"s","terminalId":"t","data":"x"}`))
	if acp.ErrorCode(err) != acp.CodeMethodNotFound || !strings.Contains(err.Error(), acp.MethodTerminalWrite) {
		t.Errorf("write to a client without input: %v, want -32601 naming the method", err)
	}
	_, err = ac.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "cat"}, &acp.TerminalOptions{Stdin: true})
	if !errors.Is(err, acp.ErrNoTerminalInput) || !strings.Contains(err.Error(), acp.MetaTerminalStdin) {
		t.Errorf("create with stdin: %v, want ErrNoTerminalInput naming %s", err, acp.MetaTerminalStdin)
	}
	_, err = ac.CreateTerminalWith(ctx, &acp.CreateTerminalRequest{SessionID: "s", Command: "cat"}, &acp.TerminalOptions{PTY: &acp.V2TerminalSize{}})
	if !errors.Is(err, acp.ErrNoTerminalInput) || !strings.Contains(err.Error(), acp.MetaTerminalPTY) {
		t.Errorf("create with pty: %v, want ErrNoTerminalInput naming %s", err, acp.MetaTerminalPTY)
	}
}

// idChecker serves the input methods, failing with an internal error
// when an id is empty: the decoding should have refused those.
type idChecker struct{ *v1Recorder }

func check(sid acp.SessionID, tid acp.TerminalID) error {
	if sid == "" || tid == "" {
		return errors.New("empty id reached the handler")
	}
	return nil
}

func (idChecker) WriteTerminal(_ context.Context, req *acp.WriteTerminalRequest) (*acp.WriteTerminalResponse, error) {
	return nil, check(req.SessionID, req.TerminalID)
}

func (idChecker) CloseTerminalStdin(_ context.Context, req *acp.CloseTerminalStdinRequest) (*acp.CloseTerminalStdinResponse, error) {
	return nil, check(req.SessionID, req.TerminalID)
}

func (idChecker) ResizeTerminal(_ context.Context, req *acp.ResizeTerminalRequest) (*acp.ResizeTerminalResponse, error) {
	return nil, check(req.SessionID, req.TerminalID)
}

// FuzzTerminalInputParams: whatever an agent sends as the params of an
// input method, the client answers (a result or -32602) without a panic,
// and the handler sees both ids set.
func FuzzTerminalInputParams(f *testing.F) {
	for _, s := range []string{`{"sessionId":"s","terminalId":"t","data":"x"}`, `{"sessionId":"s","terminalId":"t","cols":80,"rows":24}`,
		`{}`, `[]`, `{"data":"\ud800"}`, `{"sessionId":"s","terminalId":"t","data":null}`, `{"sessionId":"s","terminalId":"t","cols":1e3}`} {
		f.Add(s)
	}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := acp.NewAgentConn(newBothAgent(), toAgentR, toClientW, nil)
	cc := acp.NewClientConn(idChecker{&v1Recorder{}}, toClientR, toAgentW, nil)
	f.Cleanup(func() { cc.Close(); ac.Close(); cc.Wait(); ac.Wait() })
	if _, err := cc.Initialize(context.Background(), nil); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, params string) {
		if !json.Valid([]byte(params)) {
			return // the engine answers -32700 before any method runs
		}
		for _, m := range []string{acp.MethodTerminalWrite, acp.MethodTerminalCloseStdin, acp.MethodTerminalResize} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := ac.ExtMethod(ctx, m, json.RawMessage(params))
			cancel()
			if err != nil && acp.ErrorCode(err) != acp.CodeInvalidParams {
				t.Fatalf("%s %s: %v", m, params, err)
			}
		}
	})
}
