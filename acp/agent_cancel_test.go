package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitingAgent's Prompt runs until its ctx ends and reports why; its
// Cancel, from minimalAgent, does nothing: the SDK must cancel for it.
type waitingAgent struct {
	minimalAgent
	started chan SessionID
	causes  chan error // context.Cause of each Prompt's ctx, once it ended
	running atomic.Int32
	overlap atomic.Bool // two Prompts of the session ran at once
	failErr error       // returned by Prompt once its ctx ended, if set
}

func newWaitingAgent() *waitingAgent {
	return &waitingAgent{started: make(chan SessionID, 16), causes: make(chan error, 16)}
}

func (a *waitingAgent) Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	if a.running.Add(1) > 1 {
		a.overlap.Store(true)
	}
	defer a.running.Add(-1)
	select { // a test that stopped reading must not keep Close waiting
	case a.started <- req.SessionID:
	case <-ctx.Done():
	}
	<-ctx.Done()
	select {
	case a.causes <- context.Cause(ctx):
	default:
	}
	if a.failErr != nil {
		return nil, a.failErr
	}
	return nil, ctx.Err() // the protocol wants "cancelled": the SDK answers it
}

// noCancelAgent has no Cancel method at all.
type noCancelAgent struct{ w *waitingAgent }

func (a noCancelAgent) Initialize(ctx context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	return a.w.Initialize(ctx, req)
}
func (a noCancelAgent) NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	return a.w.NewSession(ctx, req)
}
func (a noCancelAgent) Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	return a.w.Prompt(ctx, req)
}

// within fails the test if ch yields nothing in time.
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing after 10 s", what)
	}
	var zero T
	return zero
}

type promptResult struct {
	resp *PromptResponse
	err  error
}

func promptAsync(cc *ClientConn, sid SessionID) <-chan promptResult {
	ch := make(chan promptResult, 1)
	go func() {
		resp, err := cc.Prompt(context.Background(), &PromptRequest{SessionID: sid, Prompt: []ContentBlock{&TextContent{Text: "x"}}})
		ch <- promptResult{resp, err}
	}()
	return ch
}

func wantCancelled(t *testing.T, what string, r promptResult) {
	t.Helper()
	if r.err != nil || r.resp == nil || r.resp.StopReason != StopReasonCancelled {
		t.Errorf("%s: %+v, %v; want stop reason cancelled", what, r.resp, r.err)
	}
}

// session/cancel cancels the session's running Prompt, whether the agent
// has a Cancel that does nothing or none, and the turn is answered
// "cancelled" though Prompt returned ctx's error. Another session's turn
// runs on.
func TestSessionCancelCancelsPrompt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent func(*waitingAgent) Agent
	}{
		{"no-op Cancel", func(w *waitingAgent) Agent { return w }},
		{"no Cancel", func(w *waitingAgent) Agent { return noCancelAgent{w} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWaitingAgent()
			cc, _ := pair(t, tc.agent(w), minimalClient{})
			other := promptAsync(cc, "other")
			within(t, "other prompt started", w.started)
			res := promptAsync(cc, "s1")
			within(t, "prompt started", w.started)
			mustOK(t, "cancel", cc.Cancel(context.Background(), &CancelNotification{SessionID: "s1"}))
			wantCancelled(t, "cancelled prompt", within(t, "prompt answer", res))
			if cause := within(t, "cause", w.causes); !errors.Is(cause, ErrTurnCancelled) {
				t.Errorf("cause %v, want ErrTurnCancelled", cause)
			}
			select {
			case r := <-other:
				t.Fatalf("the other session's turn ended too: %+v %v", r.resp, r.err)
			default:
			}
			mustOK(t, "cancel other", cc.Cancel(context.Background(), &CancelNotification{SessionID: "other"}))
			wantCancelled(t, "other prompt", within(t, "other answer", other))
		})
	}
}

// A session/cancel written right behind its session/prompt may be handled
// before the prompt's handler has started: the turn is cancelled all the
// same.
func TestSessionCancelRightBehindPrompt(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	w := newWaitingAgent()
	ac := NewAgentConn(w, toAgentR, toClientW, nil)
	defer ac.Close()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		buf := make([]byte, 1<<16)
		var acc strings.Builder
		for {
			n, err := toClientR.Read(buf)
			acc.Write(buf[:n])
			for {
				s := acc.String()
				i := strings.IndexByte(s, '\n')
				if i < 0 {
					break
				}
				lines <- s[:i]
				acc.Reset()
				acc.WriteString(s[i+1:])
			}
			if err != nil {
				return
			}
		}
	}()
	const rounds = 50
	var in strings.Builder
	for i := 1; i <= rounds; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s%d","prompt":[]}}`+"\n", i, i)
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s%d"}}`+"\n", i)
	}
	if _, err := io.WriteString(toAgentW, in.String()); err != nil {
		t.Fatal(err)
	}
	for range rounds {
		if l := within(t, "answer", lines); !strings.Contains(l, `"stopReason":"cancelled"`) {
			t.Errorf("answer %s, want stop reason cancelled", l)
		}
	}
	toAgentW.Close()
	ac.Close()
	toClientR.Close()
}

// With SupersedePrompts, a newer session/prompt for a session supersedes
// the running one: the older is cancelled and answered "cancelled", and the newer starts only
// once the older has returned.
func TestNewerPromptSupersedes(t *testing.T) {
	w := newWaitingAgent()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := NewAgentConn(w, toAgentR, toClientW, &ConnOptions{SupersedePrompts: true})
	cc := NewClientConn(minimalClient{}, toClientR, toAgentW, nil)
	defer func() {
		cc.Close()
		ac.Close()
	}()
	first := promptAsync(cc, "s1")
	within(t, "first prompt started", w.started)
	second := promptAsync(cc, "s1")
	wantCancelled(t, "superseded prompt", within(t, "first answer", first))
	if cause := within(t, "cause", w.causes); !errors.Is(cause, ErrTurnSuperseded) {
		t.Errorf("cause %v, want ErrTurnSuperseded", cause)
	}
	within(t, "second prompt started", w.started)
	mustOK(t, "cancel", cc.Cancel(context.Background(), &CancelNotification{SessionID: "s1"}))
	wantCancelled(t, "second prompt", within(t, "second answer", second))
	if w.overlap.Load() {
		t.Error("two Prompts of one session ran at once")
	}
}

// cancelRecorder also has a Cancel of its own, which is still called.
type cancelRecorder struct {
	*waitingAgent
	cancels chan SessionID
}

func (a *cancelRecorder) Cancel(_ context.Context, n *CancelNotification) error {
	a.cancels <- n.SessionID
	return nil
}

func (a *cancelRecorder) CloseSession(context.Context, *CloseSessionRequest) (*CloseSessionResponse, error) {
	return nil, nil
}

// The agent's own Cancel is called after the turn is cancelled; an error
// that Prompt returns once cancelled still ends the turn as "cancelled";
// session/close cancels the session's turn as session/cancel does.
func TestCancelKeepsAgentCancelAndCloseCancels(t *testing.T) {
	w := newWaitingAgent()
	w.failErr = errors.New("the model stream broke off")
	a := &cancelRecorder{waitingAgent: w, cancels: make(chan SessionID, 1)}
	cc, _ := pair(t, a, minimalClient{})
	res := promptAsync(cc, "s1")
	within(t, "prompt started", w.started)
	mustOK(t, "cancel", cc.Cancel(context.Background(), &CancelNotification{SessionID: "s1"}))
	wantCancelled(t, "prompt failing after its cancel", within(t, "answer", res))
	within(t, "cause", w.causes)
	if sid := within(t, "the agent's Cancel", a.cancels); sid != "s1" {
		t.Errorf("the agent's Cancel saw %q, want s1", sid)
	}

	res = promptAsync(cc, "s2")
	within(t, "prompt started", w.started)
	if _, err := cc.CloseSession(context.Background(), &CloseSessionRequest{SessionID: "s2"}); err != nil {
		t.Fatal(err)
	}
	wantCancelled(t, "prompt of a closed session", within(t, "answer", res))
	if cause := within(t, "cause", w.causes); !errors.Is(cause, ErrTurnCancelled) || !strings.Contains(cause.Error(), "session/close") {
		t.Errorf("cause %v, want ErrTurnCancelled by session/close", cause)
	}
}
