// Package bench measures acpterm's SDK against github.com/coder/acp-go-sdk on the same round
// trip: an agent calling the client's terminal/output, over the same transport, with the same
// bytes on the wire. It is a module of its own, so that the main module never depends on the
// SDK it is measured against.
//
//	cd bench && go test -run '^$' -bench TerminalOutput -count 3
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/acpterm/acpterm/acp"
	coder "github.com/coder/acp-go-sdk"
)

// The request every call sends.
const (
	sessionID  = "sess_1"
	terminalID = "term_1"
)

// Output is a terminal/output result in terms common to both SDKs.
type Output struct {
	Output    string
	Truncated bool
}

// TerminalOutput returns the result of a terminal/output call whose output is n bytes of
// what a test run prints: ASCII lines, so that the JSON string has escapes (\n, \t) and both
// SDKs encode it to the same bytes (neither has HTML characters to escape differently).
func TerminalOutput(n int) Output {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "=== RUN   TestShell/case_%04d\n--- PASS: TestShell/case_%04d (0.%02ds)\n", i, i, i%100)
		if i%10 == 9 {
			fmt.Fprintf(&sb, "ok  \tgithub.com/example/project/pkg%d\t0.%03ds\n", i/10, i%1000)
		}
	}
	return Output{Output: sb.String()[:n], Truncated: n > 1<<20}
}

// Ends are the two ends of a duplex connection: the agent reads AgentR and writes AgentW, the
// client reads ClientR and writes ClientW.
type Ends struct {
	AgentR, ClientR io.ReadCloser
	AgentW, ClientW io.WriteCloser
}

// Transport opens the ends of one connection.
type Transport struct {
	Name string
	Open func() (Ends, error)
}

// Transports are the ones measured: io.Pipe (in memory, each Write waits for the peer to read
// it) and os.Pipe (the kernel's pipe, as between an agent process and its client).
var Transports = []Transport{
	{"iopipe", ioPipes},
	{"ospipe", osPipes},
}

func ioPipes() (Ends, error) {
	toClientR, toClientW := io.Pipe()
	toAgentR, toAgentW := io.Pipe()
	return Ends{AgentR: toAgentR, AgentW: toClientW, ClientR: toClientR, ClientW: toAgentW}, nil
}

func osPipes() (Ends, error) {
	toClientR, toClientW, err := os.Pipe()
	if err != nil {
		return Ends{}, err
	}
	toAgentR, toAgentW, err := os.Pipe()
	if err != nil {
		toClientR.Close()
		toClientW.Close()
		return Ends{}, err
	}
	return Ends{AgentR: toAgentR, AgentW: toClientW, ClientR: toClientR, ClientW: toAgentW}, nil
}

// Pair is one SDK's agent-side connection and the client-side connection it calls.
type Pair interface {
	// TerminalOutput makes one terminal/output call from the agent to the client.
	TerminalOutput(ctx context.Context) (Output, error)
	// Close ends both connections and waits for them.
	Close() error
}

// SDK connects an agent and a client over ends; the client answers every terminal/output
// call with out.
type SDK struct {
	Name    string
	Connect func(ends Ends, out Output) Pair
}

// SDKs are the two compared, acpterm first.
var SDKs = []SDK{
	{"acpterm", connectAcpterm},
	{"coder", connectCoder},
}

// errWrongTerminal is what both clients answer a request for another terminal with.
var errWrongTerminal = errors.New("unknown terminal")

// acptermClient serves terminal/output. Only terminal/output is sent to it here: the other
// methods of acp.Client and acp.TerminalHandler are those of the nil interfaces it embeds.
type acptermClient struct {
	acp.Client
	acp.TerminalHandler
	out *acp.TerminalOutputResponse
}

func (c *acptermClient) TerminalOutput(_ context.Context, req *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	if req.SessionID != sessionID || req.TerminalID != terminalID {
		return nil, errWrongTerminal
	}
	return c.out, nil
}

// acptermAgent is never called: the agent side only calls the client.
type acptermAgent struct{ acp.Agent }

type acptermPair struct {
	agent  *acp.AgentConn
	client *acp.ClientConn
}

func connectAcpterm(ends Ends, out Output) Pair {
	c := &acptermClient{out: &acp.TerminalOutputResponse{Output: out.Output, Truncated: out.Truncated}}
	return &acptermPair{
		client: acp.NewClientConn(c, ends.ClientR, ends.ClientW, nil),
		agent:  acp.NewAgentConn(acptermAgent{}, ends.AgentR, ends.AgentW, nil),
	}
}

func (p *acptermPair) TerminalOutput(ctx context.Context) (Output, error) {
	resp, err := p.agent.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: sessionID, TerminalID: terminalID})
	if err != nil {
		return Output{}, err
	}
	return Output{Output: resp.Output, Truncated: resp.Truncated}, nil
}

func (p *acptermPair) Close() error {
	return errors.Join(p.agent.Close(), p.client.Close())
}

// coderClient serves terminal/output; as with acptermClient, nothing else is sent to it.
type coderClient struct {
	coder.Client
	out coder.TerminalOutputResponse
}

func (c *coderClient) TerminalOutput(_ context.Context, req coder.TerminalOutputRequest) (coder.TerminalOutputResponse, error) {
	if req.SessionId != sessionID || req.TerminalId != terminalID {
		return coder.TerminalOutputResponse{}, errWrongTerminal
	}
	return c.out, nil
}

type coderAgent struct{ coder.Agent }

type coderPair struct {
	ends   Ends
	agent  *coder.AgentSideConnection
	client *coder.ClientSideConnection
}

func connectCoder(ends Ends, out Output) Pair {
	c := &coderClient{out: coder.TerminalOutputResponse{Output: out.Output, Truncated: out.Truncated}}
	p := &coderPair{
		ends:   ends,
		client: coder.NewClientSideConnection(c, ends.ClientW, ends.ClientR),
		agent:  coder.NewAgentSideConnection(coderAgent{}, ends.AgentW, ends.AgentR),
	}
	// It logs the end of every connection through slog's default logger.
	quiet := slog.New(slog.DiscardHandler)
	p.client.SetLogger(quiet)
	p.agent.SetLogger(quiet)
	return p
}

func (p *coderPair) TerminalOutput(ctx context.Context) (Output, error) {
	resp, err := p.agent.TerminalOutput(ctx, coder.TerminalOutputRequest{SessionId: sessionID, TerminalId: terminalID})
	if err != nil {
		return Output{}, err
	}
	return Output{Output: resp.Output, Truncated: resp.Truncated}, nil
}

// Close closes the pipes, which is how a coder connection ends, and waits for both readers.
func (p *coderPair) Close() error {
	err := errors.Join(p.ends.AgentW.Close(), p.ends.ClientW.Close(), p.ends.AgentR.Close(), p.ends.ClientR.Close())
	<-p.agent.Done()
	<-p.client.Done()
	return err
}

// Run makes calls terminal/output calls on p from callers goroutines at once, and checks that
// each returns want.
func Run(ctx context.Context, p Pair, calls, callers int, want Output) error {
	if callers <= 1 {
		for range calls {
			if err := check(ctx, p, want); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, callers)
	)
	for g := range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(calls) {
				if err := check(ctx, p, want); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// check makes one call and compares its result with want by length only, so that checking
// does not weigh on what is measured; TestTerminalOutput compares whole values.
func check(ctx context.Context, p Pair, want Output) error {
	got, err := p.TerminalOutput(ctx)
	if err != nil {
		return err
	}
	if len(got.Output) != len(want.Output) || got.Truncated != want.Truncated {
		return fmt.Errorf("got %d bytes of output (truncated %v), want %d (truncated %v)", len(got.Output), got.Truncated, len(want.Output), want.Truncated)
	}
	return nil
}
