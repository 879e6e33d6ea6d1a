//go:build linux

package terminal

import (
	"strings"
	"testing"
)

// endless is a reader that never ends, as an environment pointed at a
// huge mapping would be.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestReadBoundedStops(t *testing.T) {
	buf := readBounded(endless{}, nil, 1<<20)
	if len(buf) != 1<<20 {
		t.Fatalf("read %d bytes from an endless reader, want the bound 1 MiB", len(buf))
	}
	small := readBounded(strings.NewReader("A=1\x00B=2\x00"), make([]byte, 0, 2), 1<<20)
	if string(small) != "A=1\x00B=2\x00" {
		t.Fatalf("read %q", small)
	}
}

// hasMarkerRef is hasMarker written the obvious way.
func hasMarkerRef(environ []byte, markers map[string]bool) bool {
	for kv := range strings.SplitSeq(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, MarkerEnv+"="); ok && markers[v] {
			return true
		}
	}
	return false
}

func FuzzHasMarker(f *testing.F) {
	f.Add([]byte(MarkerEnv+"=t1.n\x00"), "t1.n")
	f.Add([]byte("A=1\x00"+MarkerEnv+"=t1.n"), "t1.n")
	f.Add([]byte("X"+MarkerEnv+"=t1.n\x00"), "t1.n")
	f.Add([]byte(MarkerEnv+"=t1.nn\x00"), "t1.n")
	f.Add([]byte("\x00\x00"+MarkerEnv+"=\x00"), "")
	f.Fuzz(func(t *testing.T, environ []byte, marker string) {
		markers := map[string]bool{marker: true}
		if got, want := hasMarker(environ, markers), hasMarkerRef(environ, markers); got != want {
			t.Fatalf("hasMarker(%q, %q) = %v, want %v", environ, marker, got, want)
		}
	})
}
