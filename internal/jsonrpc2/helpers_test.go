package jsonrpc2

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout guards a wait on a channel so a broken engine fails the test instead of hanging it.
const timeout = 20 * time.Second

// pipes returns the two ends of a duplex connection: a reads what b writes and vice versa.
type pipes func(t testing.TB) (aR io.ReadCloser, aW io.WriteCloser, bR io.ReadCloser, bW io.WriteCloser)

func memPipes(t testing.TB) (io.ReadCloser, io.WriteCloser, io.ReadCloser, io.WriteCloser) {
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	return r1, w2, r2, w1
}

func osPipes(t testing.TB) (io.ReadCloser, io.WriteCloser, io.ReadCloser, io.WriteCloser) {
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r1, w2, r2, w1
}

var transports = []struct {
	name  string
	pipes pipes
}{
	{"inmemory", memPipes},
	{"ospipe", osPipes},
}

func logOpts(t testing.TB) *Options { return &Options{Logf: t.Logf} }

// connPair connects two Conns; both are closed when the test ends.
func connPair(t testing.TB, p pipes, ha, hb Handler) (a, b *Conn) {
	aR, aW, bR, bW := p(t)
	a = NewConn(aR, aW, ha, logOpts(t))
	b = NewConn(bR, bW, hb, logOpts(t))
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}

// echo answers every call with its params and ignores notifications.
var echo = HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
	return req.Params, nil
})

// wirePeer drives a Conn through its raw byte stream: the test writes lines and reads replies.
type wirePeer struct {
	t     testing.TB
	conn  *Conn
	in    *io.PipeWriter // what the Conn reads
	lines chan string    // what the Conn wrote, one message each
}

func newWirePeer(t testing.TB, h Handler, opts *Options) *wirePeer {
	if opts == nil {
		opts = logOpts(t)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &wirePeer{t: t, in: inW, lines: make(chan string, 100)}
	p.conn = NewConn(inR, outW, h, opts)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(p.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		p.conn.Close() // closes outW, which ends the scanning goroutine
		for range p.lines {
		}
		wg.Wait()
	})
	return p
}

func (p *wirePeer) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s); err != nil {
		p.t.Fatalf("writing to the conn: %v", err)
	}
}

func (p *wirePeer) recv() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the conn's output ended")
		}
		return l
	case <-time.After(timeout):
		p.t.Fatal("no reply from the conn")
	}
	return ""
}

// tapWriter copies each message written through it to lines.
type tapWriter struct {
	w     io.WriteCloser
	lines chan string
}

func (tw *tapWriter) Write(p []byte) (int, error) {
	select {
	case tw.lines <- string(p):
	default: // the test only looks at the first few
	}
	return tw.w.Write(p)
}

func (tw *tapWriter) Close() error { return tw.w.Close() }

// replyShape checks that line is one valid JSON-RPC response object and returns its id text
// and error code (0 for a result).
func replyShape(line string) (id string, code int64, err error) {
	if strings.ContainsAny(line, "\n") {
		return "", 0, fmt.Errorf("reply contains a newline: %q", line)
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return "", 0, fmt.Errorf("reply is not a JSON object: %v: %q", err, line)
	}
	if dec.More() {
		return "", 0, fmt.Errorf("reply has trailing data: %q", line)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return "", 0, fmt.Errorf("reply without jsonrpc 2.0: %q", line)
	}
	rawID, ok := m["id"]
	if !ok {
		return "", 0, fmt.Errorf("reply without an id: %q", line)
	}
	if _, ok := parseID(rawID); !ok {
		return "", 0, fmt.Errorf("reply with a bad id: %q", line)
	}
	_, hasResult := m["result"]
	rawErr, hasError := m["error"]
	if hasResult == hasError || len(m) != 3 {
		return "", 0, fmt.Errorf("reply must have jsonrpc, id and exactly one of result/error: %q", line)
	}
	if hasError {
		var e struct {
			Code    *int64           `json:"code"`
			Message *string          `json:"message"`
			Data    *json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(rawErr, &e); err != nil || e.Code == nil || e.Message == nil {
			return "", 0, fmt.Errorf("reply with a bad error object: %q", line)
		}
		code = *e.Code
	}
	return string(rawID), code, nil
}
