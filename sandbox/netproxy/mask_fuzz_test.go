package netproxy_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// FuzzMaskHeaders: Unmask replaces every sentinel in every value by its
// key and nothing else (the same as strings.ReplaceAll over each value),
// never touches names, and Remask takes it back.
func FuzzMaskHeaders(f *testing.F) {
	f.Add("X-Api-Key", testSentinel, "Bearer "+testSentTok)
	f.Add("Authorization", "Bearer "+testSentinel+testSentinel, "acpterm-masked-")
	f.Add(testSentinel, "acpterm-masked-0123", "x"+testSentTok+"y")
	u, _ := url.Parse("https://api.example.com")
	m, err := netproxy.NewMasker(netproxy.MaskOptions{Upstream: u,
		Secrets: []netproxy.Secret{{Sentinel: testSentinel, Value: testKey}, {Sentinel: testSentTok, Value: testToken}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name, v1, v2 string) {
		if strings.Contains(v1+v2, testKey) || strings.Contains(v1+v2, testToken) {
			t.Skip("a value holding a key already")
		}
		h := http.Header{name: {v1, v2}}
		m.Unmask(h)
		if len(h) != 1 || len(h[name]) != 2 {
			t.Fatalf("names or values changed: %q", h)
		}
		for i, v := range []string{v1, v2} {
			want := strings.ReplaceAll(strings.ReplaceAll(v, testSentinel, testKey), testSentTok, testToken)
			if h[name][i] != want {
				t.Fatalf("Unmask(%q) = %q, want %q", v, h[name][i], want)
			}
		}
		m.Remask(h)
		if h[name][0] != v1 || h[name][1] != v2 {
			t.Fatalf("Remask(Unmask(%q, %q)) = %q", v1, v2, h[name])
		}
	})
}

// FuzzScrubber: however the stream is cut into reads, the scrubbed
// stream is the whole input with every key replaced, and no key is
// left in it.
func FuzzScrubber(f *testing.F) {
	f.Add("before secret-123 after", []byte{3, 7, 1})
	f.Add("secret-12secret-123secret-1", []byte{1, 1, 1, 1, 1})
	f.Add("token-45token-456", []byte{8})
	f.Fuzz(func(t *testing.T, in string, cuts []byte) {
		r := &chunked{s: in, cuts: cuts}
		s := netproxy.NewScrubber(io.NopCloser(r), []string{testKey, testToken}, []string{testSentinel, testSentTok})
		got, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.NewReplacer(testKey, testSentinel, testToken, testSentTok).Replace(in)
		if string(got) != want {
			t.Fatalf("scrubbed %q in reads %v: %q, want %q", in, cuts, got, want)
		}
	})
}

// chunked reads s in pieces of the sizes cuts gives, in turn (0 as 1).
type chunked struct {
	s    string
	cuts []byte
	i    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := len(c.s)
	if len(c.cuts) > 0 {
		n = max(1, int(c.cuts[c.i%len(c.cuts)]))
		c.i++
	}
	n = min(n, len(p), len(c.s))
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}
