package screen

import (
	"math/rand/v2"
	"testing"
)

// The word-at-a-time scans against a byte at a time: every length up to
// three words and a bit, every position of the first byte that stops
// them, and each kind of byte there (and at random after it, so that the
// borrows and carries of the bytes above it are tried).
func TestScans(t *testing.T) {
	slowRun := func(b []byte) int {
		for i, c := range b {
			if c < 0x20 || c >= 0x7f {
				return i
			}
		}
		return len(b)
	}
	slowSpecial := func(b []byte) int {
		for i, c := range b {
			if c == 0 || c >= 0x80 {
				return i
			}
		}
		return len(b)
	}
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x41, 0x7e, 0x7f, 0x80, 0x81, 0x9f, 0xa0, 0xdf, 0xe0, 0xfe, 0xff}
	rnd := rand.New(rand.NewPCG(1, 2))
	for n := range 30 {
		for at := 0; at <= n; at++ {
			for _, stop := range edges {
				for _, fill := range []byte{' ', 'A', '~'} {
					b := make([]byte, n)
					for i := range b {
						switch {
						case i < at:
							b[i] = fill
						case i == at:
							b[i] = stop
						default:
							b[i] = byte(rnd.Uint32())
						}
					}
					if got, want := asciiRun(b), slowRun(b); got != want {
						t.Fatalf("asciiRun(%x) = %d, want %d", b, got, want)
					}
					if got, want := special(b), slowSpecial(b); got != want {
						t.Fatalf("special(%x) = %d, want %d", b, got, want)
					}
				}
			}
		}
	}
}
