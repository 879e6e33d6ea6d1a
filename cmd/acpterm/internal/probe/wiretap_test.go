package probe

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// feedAll pushes data through a lineBuf in chunks cut at the given sizes.
func feedAll(data []byte, cuts []int) [][]byte {
	var lb lineBuf
	var lines [][]byte
	collect := func(l []byte) { lines = append(lines, append([]byte(nil), l...)) }
	for _, n := range cuts {
		if n <= 0 || len(data) == 0 {
			continue
		}
		n = min(n, len(data))
		lb.feed(data[:n], collect)
		data = data[n:]
	}
	lb.feed(data, collect)
	return lines
}

// wantLines is what lineBuf must yield: every complete line no longer than
// maxTapLine.
func wantLines(data []byte) [][]byte {
	parts := bytes.Split(data, []byte("\n"))
	var out [][]byte
	for _, p := range parts[:len(parts)-1] {
		if len(p) <= maxTapLine {
			out = append(out, p)
		}
	}
	return out
}

func sameLines(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestLineBuf(t *testing.T) {
	long := strings.Repeat("y", maxTapLine+1)
	data := []byte("one\n\ntwo\n" + long + "\nthree\n" + strings.Repeat("z", maxTapLine) + "\npartial")
	for _, cuts := range [][]int{nil, {1, 1, 1}, {3, 5, maxTapLine - 7, 2}, {maxTapLine, maxTapLine}} {
		if got := feedAll(data, cuts); !sameLines(got, wantLines(data)) {
			t.Errorf("cuts %v: %d lines, want %d", cuts, len(got), len(wantLines(data)))
		}
	}
}

func FuzzLineBuf(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":2,\"error\":{\"code\":-32800}}\n"), 3, 7)
	f.Add([]byte("\n\n\nabc"), 1, 1)
	f.Fuzz(func(t *testing.T, data []byte, a, b int) {
		got := feedAll(data, []int{a % 97, b % 4099, a % 13})
		if want := wantLines(data); !sameLines(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		// The tap must survive any traffic.
		tap := newWireTap()
		tap.outgoing(data)
		tap.incoming(data)
	})
}

// TestTapSeesCancelReply follows a cancelled request through both
// directions, with the messages split awkwardly across reads and writes.
func TestTapSeesCancelReply(t *testing.T) {
	clientOut := strings.Join([]string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`,                                           // not cancelled
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,         // a notification
		`{"jsonrpc":"2.0","id":9,"error":{"code":-32800,"message":"request cancelled"}}`, // the answer
		`{"jsonrpc":"2.0","id":9,"error":{"code":-32800,"message":"again, ignored"}}`,    // a duplicate
		`{"jsonrpc":"2.0","id":"x","result":{"exitCode":0}}`,                             // a string id
	}, "\n") + "\n"
	var sink bytes.Buffer
	tap, r, w := tapConn(&oneByteReader{strings.NewReader(clientOut)}, &sink)

	sent := tap.onSent("terminal/wait_for_exit")
	io.WriteString(w, `{"jsonrpc":"2.0","id":9,"method":"terminal/wait_for_exit","params":{}}`+"\n")
	select {
	case <-sent:
	default:
		t.Fatal("the written request was not reported")
	}
	io.WriteString(w, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":9}}`+"\n"+`{"jsonrpc":"2.0","method":"$/cancel_`)
	io.WriteString(w, `request","params":{"requestId":"x"}}`+"\n")

	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(sink.String(), `"requestId":"x"}}`+"\n") {
		t.Errorf("the writer changed the bytes: %q", sink.String())
	}
	var got []cancelReply
	for len(tap.replies) > 0 {
		got = append(got, <-tap.replies)
	}
	want := []cancelReply{{ID: "9", Code: -32800}, {ID: `"x"`, Result: true}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("replies %+v, want %+v", got, want)
	}
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// closeCounter counts Close calls.
type closeCounter struct {
	io.Reader
	io.Writer
	n *int
}

func (c closeCounter) Close() error { *c.n++; return nil }

func TestTapForwardsClose(t *testing.T) {
	n := 0
	both := closeCounter{strings.NewReader(""), io.Discard, &n}
	_, r, w := tapConn(both, both)
	r.(io.Closer).Close()
	w.(io.Closer).Close()
	if n != 1 {
		t.Errorf("one stream closed %d times", n)
	}
	m := 0
	_, r, w = tapConn(closeCounter{strings.NewReader(""), nil, &m}, closeCounter{nil, io.Discard, &m})
	r.(io.Closer).Close()
	w.(io.Closer).Close()
	if m != 2 {
		t.Errorf("two streams closed %d times", m)
	}
}
