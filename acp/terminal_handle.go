package acp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrTerminalReleased is returned, without a round trip, by every method of a
// TerminalHandle after Release or Close.
var ErrTerminalReleased = errors.New("acp: terminal already released")

// ErrNoTerminalCapability is returned by CreateTerminal when the client did
// not advertise clientCapabilities.terminal in initialize.
var ErrNoTerminalCapability = errors.New("acp: the client does not support terminals (clientCapabilities.terminal is false)")

// closeTimeout bounds the release that Close sends.
const closeTimeout = 5 * time.Second

// TerminalHandle is an agent's handle on a terminal running in the client:
// the Go form of the TypeScript SDK's TerminalHandle. Its methods are safe
// for concurrent use.
type TerminalHandle struct {
	ID        TerminalID
	SessionID SessionID

	conn     *AgentConn
	mu       sync.Mutex
	released bool
}

// CreateTerminal sends terminal/create and returns a handle on the new
// terminal. The command runs on in the client; release the handle (Release,
// or defer Close) when done with it.
func (a *AgentConn) CreateTerminal(ctx context.Context, req *CreateTerminalRequest) (*TerminalHandle, error) {
	if !a.ClientCapabilities().Terminal {
		return nil, ErrNoTerminalCapability
	}
	resp, err := call[CreateTerminalResponse](ctx, &a.conn, MethodTerminalCreate, req)
	if err != nil {
		return nil, err
	}
	return &TerminalHandle{ID: resp.TerminalID, SessionID: req.SessionID, conn: a}, nil
}

func (t *TerminalHandle) live() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released {
		return fmt.Errorf("%w: %s", ErrTerminalReleased, t.ID)
	}
	return nil
}

// Output sends terminal/output: the output so far, whether it was truncated,
// and the exit status once the command has exited.
func (t *TerminalHandle) Output(ctx context.Context) (*TerminalOutputResponse, error) {
	if err := t.live(); err != nil {
		return nil, err
	}
	return t.conn.TerminalOutput(ctx, &TerminalOutputRequest{SessionID: t.SessionID, TerminalID: t.ID})
}

// WaitForExit sends terminal/wait_for_exit and returns the exit status. If
// ctx ends first it sends $/cancel_request and returns ctx's error; the
// command keeps running.
func (t *TerminalHandle) WaitForExit(ctx context.Context) (*WaitForTerminalExitResponse, error) {
	if err := t.live(); err != nil {
		return nil, err
	}
	return t.conn.WaitForTerminalExit(ctx, &WaitForTerminalExitRequest{SessionID: t.SessionID, TerminalID: t.ID})
}

// Kill sends terminal/kill. The terminal stays valid for Output and
// WaitForExit.
func (t *TerminalHandle) Kill(ctx context.Context) error {
	if err := t.live(); err != nil {
		return err
	}
	_, err := t.conn.KillTerminal(ctx, &KillTerminalRequest{SessionID: t.SessionID, TerminalID: t.ID})
	return err
}

// Release sends terminal/release: the client kills the command if it still
// runs and frees the terminal. Afterwards every method of the handle returns
// ErrTerminalReleased. The handle counts as released even when the request
// fails, since the terminal cannot be relied on after that.
func (t *TerminalHandle) Release(ctx context.Context) error {
	t.mu.Lock()
	if t.released {
		t.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrTerminalReleased, t.ID)
	}
	t.released = true
	t.mu.Unlock()
	_, err := t.conn.ReleaseTerminal(ctx, &ReleaseTerminalRequest{SessionID: t.SessionID, TerminalID: t.ID})
	return err
}

// Close releases the terminal unless that was done already, on a background
// context bounded to a few seconds, so that it can be deferred right after
// CreateTerminal. Closing a released handle returns nil.
func (t *TerminalHandle) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := t.Release(ctx)
	if errors.Is(err, ErrTerminalReleased) {
		return nil
	}
	return err
}
