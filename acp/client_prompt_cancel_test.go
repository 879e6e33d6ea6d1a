package acp

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// Cancelling the ctx of ClientConn.Prompt sends session/cancel and returns
// the agent's answer: the turn ends "cancelled", with no error, and the
// agent saw the session/cancel, not only $/cancel_request.
func TestPromptCtxSendsSessionCancel(t *testing.T) {
	w := newWaitingAgent()
	cc, _ := pair(t, w, minimalClient{})
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan promptResult, 1)
	go func() {
		resp, err := cc.Prompt(ctx, &PromptRequest{SessionID: "s1"})
		res <- promptResult{resp, err}
	}()
	within(t, "prompt started", w.started)
	cancel()
	wantCancelled(t, "Prompt after its ctx ended", within(t, "answer", res))
	if cause := within(t, "cause", w.causes); !errors.Is(cause, ErrTurnCancelled) {
		t.Errorf("the agent's Prompt ended by %v, want session/cancel (ErrTurnCancelled)", cause)
	}
}

// stubbornAgent's Prompt ignores its ctx until released.
type stubbornAgent struct {
	minimalAgent
	started, release chan struct{}
}

func (a stubbornAgent) Prompt(context.Context, *PromptRequest) (*PromptResponse, error) {
	close(a.started)
	<-a.release
	return &PromptResponse{StopReason: StopReasonEndTurn}, nil
}

// An agent that does not answer within PromptCancelWait is abandoned:
// Prompt returns ctx's error.
func TestPromptCancelWaitIsBounded(t *testing.T) {
	a := stubbornAgent{started: make(chan struct{}), release: make(chan struct{})}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := NewAgentConn(a, toAgentR, toClientW, nil)
	cc := NewClientConn(minimalClient{}, toClientR, toAgentW, &ConnOptions{PromptCancelWait: 50 * time.Millisecond})
	defer func() {
		close(a.release)
		cc.Close()
		ac.Close()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan promptResult, 1)
	go func() {
		resp, err := cc.Prompt(ctx, &PromptRequest{SessionID: "s1"})
		res <- promptResult{resp, err}
	}()
	<-a.started
	cancel()
	if r := within(t, "answer", res); !errors.Is(r.err, context.Canceled) || r.resp != nil {
		t.Errorf("Prompt: %+v, %v; want ctx's error", r.resp, r.err)
	}
}
