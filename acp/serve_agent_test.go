package acp

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// The hook interfaces are what the connections look for.
var (
	_ AgentConnSetter  = (*connAgent)(nil)
	_ ClientConnSetter = (*connClient)(nil)
)

// connClient takes its connection through SetConn.
type connClient struct {
	minimalClient
	conn *ClientConn
}

func (c *connClient) SetConn(cc *ClientConn) { c.conn = cc }

func TestClientSetConnBeforeServing(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	client := &connClient{}
	cc := NewClientConn(client, r, io.Discard, nil)
	defer cc.Close()
	if client.conn != cc {
		t.Fatal("NewClientConn did not hand the client its connection")
	}
}

// errReader fails every Read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// ServeAgent says why it returned: nil for the end of the client's input,
// the read error, or ctx's error.
func TestServeAgentReturns(t *testing.T) {
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		r    io.Reader
		want error // nil: a nil error
	}{
		{"end of input", context.Background(), strings.NewReader(""), nil},
		{"end of input after a message", context.Background(), strings.NewReader(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}` + "\n"), nil},
		{"read error", context.Background(), errReader{boom}, boom},
		{"ctx ended", cancelled, blockingReader(t), context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ServeAgent(tc.ctx, &connAgent{}, tc.r, io.Discard, nil)
			if tc.want == nil && err != nil || !errors.Is(err, tc.want) {
				t.Fatalf("ServeAgent: %v, want %v", err, tc.want)
			}
		})
	}
}

// blockingReader is the read side of a pipe nobody writes: a client that
// stays but says nothing. Closing it is ServeAgent's job (its Close closes
// r); the cleanup covers a failing test.
func blockingReader(t *testing.T) io.Reader {
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close() })
	return r
}

// A client that writes its requests and closes the agent's stdin gets every
// answer before ServeAgent returns, prompts included; with a negative
// DrainTimeout it gets none of the calls still running at the end of input.
// Those are the no-drain agent's: each waits until its ctx ends (the end of
// input ends it), else at most 10 s, and then answers all the same. An
// agent that answers at once could be answered before the end of input is
// read, which a drain does not change.
func TestServeAgentAnswersAfterEndOfInput(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`,
	}, "\n")
	for _, tc := range []struct {
		name  string
		agent Agent
		drain time.Duration
		want  int
	}{
		{"default", minimalAgent{}, 0, 3},
		{"no drain", untilEndAgent{}, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := ServeAgent(context.Background(), tc.agent, strings.NewReader(in), &out, &ConnOptions{DrainTimeout: tc.drain}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(out.String(), `"result"`); got != tc.want {
				t.Errorf("%d answers, want %d:\n%s", got, tc.want, out.String())
			}
			if tc.want > 0 && !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`) {
				t.Errorf("the prompt was not answered:\n%s", out.String())
			}
		})
	}
}

// untilEndAgent is minimalAgent whose calls each wait until their ctx ends,
// or at most 10 s, and then answer as if nothing happened.
type untilEndAgent struct{ minimalAgent }

func untilEnd(ctx context.Context) {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (a untilEndAgent) Initialize(ctx context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	untilEnd(ctx)
	return a.minimalAgent.Initialize(context.Background(), req)
}

func (a untilEndAgent) NewSession(ctx context.Context, req *NewSessionRequest) (*NewSessionResponse, error) {
	untilEnd(ctx)
	return a.minimalAgent.NewSession(context.Background(), req)
}

func (a untilEndAgent) Prompt(ctx context.Context, req *PromptRequest) (*PromptResponse, error) {
	untilEnd(ctx)
	return a.minimalAgent.Prompt(context.Background(), req)
}
