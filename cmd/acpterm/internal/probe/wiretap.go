package probe

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// The SDK hides two things some cases need to see: when a request has
// actually been written (so that a case can race a second request against
// it deterministically), and how the client answered a request the agent
// cancelled with $/cancel_request (the SDK returns ctx's error at once and
// drops the late answer). wireTap watches the raw lines in both directions
// for just that; it never changes a byte.

// maxTapLine bounds the lines the tap parses. The messages it looks for are
// small; longer lines (a big terminal/output) pass through unexamined.
const maxTapLine = 64 << 10

// cancelReply is the client's answer to a request the agent cancelled.
type cancelReply struct {
	ID     string // the request id, as raw JSON
	Code   int64  // the error code, 0 for a result
	Result bool   // it answered with a (partial) result instead of an error
}

type wireTap struct {
	mu        sync.Mutex
	cancelled map[string]bool            // ids the agent sent $/cancel_request for, not yet answered
	sentWatch map[string][]chan struct{} // method -> closed when a request for it has been written
	replies   chan cancelReply           // answers to cancelled requests, newest dropped when full
}

func newWireTap() *wireTap {
	return &wireTap{
		cancelled: map[string]bool{},
		sentWatch: map[string][]chan struct{}{},
		replies:   make(chan cancelReply, 16),
	}
}

// onSent returns a channel closed once the next request for method has
// been written to the client.
func (t *wireTap) onSent(method string) <-chan struct{} {
	ch := make(chan struct{})
	t.mu.Lock()
	t.sentWatch[method] = append(t.sentWatch[method], ch)
	t.mu.Unlock()
	return ch
}

// drainReplies forgets answers seen so far, so that the next one read from
// replies belongs to what the caller does next.
func (t *wireTap) drainReplies() {
	for {
		select {
		case <-t.replies:
		default:
			return
		}
	}
}

// tapMsg is the part of a JSON-RPC message the tap reads.
type tapMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int64 `json:"code"`
	} `json:"error"`
}

func rawKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(bytes.TrimSpace(raw))
	}
	return b.String()
}

// outgoing examines a line the agent is about to write. It returns the
// method of a request, to be reported by sent once the write is done.
func (t *wireTap) outgoing(line []byte) (method string) {
	if !bytes.Contains(line, []byte(`"method"`)) {
		return ""
	}
	var m tapMsg
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return ""
	}
	if m.Method == "$/cancel_request" && len(m.Params.RequestID) > 0 {
		// Recorded before the write: the answer may come back at once.
		t.mu.Lock()
		t.cancelled[rawKey(m.Params.RequestID)] = true
		t.mu.Unlock()
	}
	if len(m.ID) == 0 || string(m.ID) == "null" {
		return ""
	}
	return m.Method
}

// sent wakes those waiting for a request for method to be written.
func (t *wireTap) sent(method string) {
	t.mu.Lock()
	chs := t.sentWatch[method]
	delete(t.sentWatch, method)
	t.mu.Unlock()
	for _, ch := range chs {
		close(ch)
	}
}

// incoming examines a line the client wrote.
func (t *wireTap) incoming(line []byte) {
	if bytes.Contains(line, []byte(`"method"`)) {
		return // a request or notification, not an answer
	}
	var m tapMsg
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
		return
	}
	key := rawKey(m.ID)
	t.mu.Lock()
	hit := t.cancelled[key]
	delete(t.cancelled, key)
	t.mu.Unlock()
	if !hit {
		return
	}
	r := cancelReply{ID: key, Result: m.Error == nil}
	if m.Error != nil {
		r.Code = m.Error.Code
	}
	select {
	case t.replies <- r:
	default:
	}
}

// lineBuf splits a byte stream into lines, keeping at most maxTapLine bytes
// of an unfinished one; a longer line is skipped whole.
type lineBuf struct {
	buf  []byte
	skip bool // inside a line that outgrew the buffer
}

// feed calls f with each line that p completes (without its newline).
func (l *lineBuf) feed(p []byte, f func(line []byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !l.skip {
				if len(l.buf)+len(p) > maxTapLine {
					l.buf, l.skip = l.buf[:0], true
				} else {
					l.buf = append(l.buf, p...)
				}
			}
			return
		}
		if !l.skip && len(l.buf)+i <= maxTapLine {
			line := p[:i]
			if len(l.buf) > 0 {
				l.buf = append(l.buf, p[:i]...)
				line = l.buf
			}
			f(line)
		}
		l.buf, l.skip = l.buf[:0], false
		p = p[i+1:]
	}
}

// tapReader is the agent's input seen through the tap.
type tapReader struct {
	r   io.Reader
	tap *wireTap
	lb  lineBuf
}

func (r *tapReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.lb.feed(p[:n], r.tap.incoming)
	return n, err
}

// Close closes the underlying reader when it can be closed, as the
// connection would have done without the tap.
func (r *tapReader) Close() error {
	if c, ok := r.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// tapWriter is the agent's output seen through the tap.
type tapWriter struct {
	w       io.Writer
	tap     *wireTap
	lb      lineBuf
	noClose bool // w is also the reader, which closes it
	methods []string
}

func (w *tapWriter) Write(p []byte) (int, error) {
	w.methods = w.methods[:0]
	w.lb.feed(p, func(line []byte) {
		if m := w.tap.outgoing(line); m != "" {
			w.methods = append(w.methods, m)
		}
	})
	n, err := w.w.Write(p)
	for _, m := range w.methods {
		w.tap.sent(m)
	}
	return n, err
}

func (w *tapWriter) Close() error {
	if c, ok := w.w.(io.Closer); ok && !w.noClose {
		return c.Close()
	}
	return nil
}

// tapConn wraps the agent's two streams.
func tapConn(r io.Reader, w io.Writer) (*wireTap, io.Reader, io.Writer) {
	t := newWireTap()
	return t, &tapReader{r: r, tap: t}, &tapWriter{w: w, tap: t, noClose: jsonrpc2.SameStream(r, w)}
}
