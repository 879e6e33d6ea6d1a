package jsonrpc2

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// attachPair connects a sender to a receiver that takes attachments and
// hands each notification it gets to got.
func attachPair(t *testing.T, opts *Options) (send *Conn, recv *Conn, got chan *Request) {
	t.Helper()
	aR, aW, bR, bW := osPipes(t)
	got = make(chan *Request, 16)
	if opts == nil {
		opts = &Options{}
	}
	opts.Attachments, opts.Logf = true, t.Logf
	send = NewConn(aR, aW, nil, logOpts(t))
	recv = NewConn(bR, bW, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		got <- req
		return nil, nil
	}), opts)
	t.Cleanup(func() {
		send.Close()
		recv.Close()
	})
	return send, recv, got
}

func params(s string) func([]byte) []byte {
	return func(b []byte) []byte { return append(b, s...) }
}

func TestAttachments(t *testing.T) {
	send, _, got := attachPair(t, nil)
	ctx := context.Background()
	big := bytes.Repeat([]byte("\x01\n{\"jsonrpc\":\"2.0\",\"method\":\"evil\"}\n\x00\xff"), 20000) // framing bytes inside
	for _, tc := range []struct {
		att    []byte
		params string
	}{
		{[]byte("abc"), `{"n":1}`},
		{[]byte{}, `{"n":2}`}, // empty, not absent
		{nil, `{"n":3}`},
		{big, `{"n":4}`},
	} {
		if err := send.NotifyAppend(ctx, "m", params(tc.params), tc.att); err != nil {
			t.Fatal(err)
		}
		if err := send.Notify(ctx, "plain", nil); err != nil {
			t.Fatal(err)
		}
		var r *Request
		select {
		case r = <-got:
		case <-time.After(timeout):
			t.Fatal("nothing received")
		}
		if r.Method != "m" || string(r.Params) != tc.params || !bytes.Equal(r.Attachment, tc.att) || (r.Attachment == nil) != (tc.att == nil) {
			t.Fatalf("got %q %s with %d bytes attached (nil %v), want %s with %d", r.Method, r.Params, len(r.Attachment), r.Attachment == nil, tc.params, len(tc.att))
		}
		if r := <-got; r.Method != "plain" || r.Attachment != nil {
			t.Fatalf("the next message: %q with %d bytes attached", r.Method, len(r.Attachment))
		}
	}
}

// A size that cannot be read, or one over the message limit, ends the
// connection: nothing after it could be trusted to be framed as meant.
func TestAttachmentFramingErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no size", "\x01\n{}\n", "malformed"},
		{"not a number", "\x01x2\n{}\n", "malformed"},
		{"negative", "\x01-2\n{}\n", "malformed"},
		{"too long", "\x0110000000000000000000\n", "malformed"},
		{"over the limit", "\x01100\n", "over the 64-byte message limit"},
		{"cut short", "\x0110\nabc", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(strings.NewReader(tc.in), io.Discard, nil, &Options{Attachments: true, MaxMessageSize: 64})
			defer c.Close()
			err := c.Wait()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Wait: %v, want %q", err, tc.want)
			}
		})
	}
}

// Without Options.Attachments the size line is a malformed line, as it
// always was.
func TestAttachmentsOff(t *testing.T) {
	p := newWirePeer(t, nil, nil)
	p.send("\x013\n")
	if _, code, err := replyShape(p.recv()); err != nil || code != CodeParseError {
		t.Errorf("reply %d, %v", code, err)
	}
}

// FuzzAttachments frames a fuzzed attachment and stream: the attachment
// arrives whole with its message, whatever it holds, and whatever follows
// neither panics nor hangs the reader.
func FuzzAttachments(f *testing.F) {
	f.Add([]byte("abc"), []byte(""))
	f.Add([]byte("\x01\n\n"), []byte("\x015\nab"))
	f.Add([]byte{}, []byte("\x01999999999999999999999\n"))
	f.Add([]byte("{}\n"), []byte(`{"jsonrpc":"2.0","method":"n"}`+"\n\x012\nxy"+`{"jsonrpc":"2.0","method":"n"}`+"\n"))
	f.Fuzz(func(t *testing.T, att, tail []byte) {
		var in bytes.Buffer
		writeAttachment(&in, att)
		in.WriteString(`{"jsonrpc":"2.0","method":"first"}` + "\n")
		in.Write(tail)
		var first *Request
		c := NewConn(&in, io.Discard, HandlerFunc(func(_ context.Context, req *Request) (any, error) {
			if first == nil {
				first = req
			}
			return nil, nil
		}), &Options{Attachments: true, MaxMessageSize: 1 << 16})
		waited := make(chan error, 1)
		go func() { waited <- c.Wait() }()
		select {
		case <-waited:
		case <-time.After(timeout):
			t.Fatal("the Conn did not finish after the end of its input")
		}
		c.Close()
		if len(att) > 1<<16 {
			return
		}
		if first == nil || first.Method != "first" || !bytes.Equal(first.Attachment, att) {
			t.Fatalf("first message %+v, attachment of %d bytes", first, len(att))
		}
	})
}
