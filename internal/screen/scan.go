package screen

import (
	"encoding/binary"
	"math/bits"
)

// Scanning bytes eight at a time, a word each step. Each test sets the
// high bit of every byte of the word that fails it, and may set it in
// bytes above one that fails (a borrow or carry goes on into the next
// byte), never below: the lowest bit set is the first byte that fails.
// The two scans are written out each for itself, so that their tests
// are inlined.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	// pass is a word of bytes that pass both tests, to pad a short slice
	// with.
	pass = 0x4141414141414141
)

// notPrintable flags the bytes of w below 0x20 (the subtraction borrows
// into a high bit the byte did not have) and from 0x7f (the byte, or the
// byte plus one, has it).
func notPrintable(w uint64) uint64 { return ((w-0x20*ones)&^w | w | (w + ones)) & highs }

// notASCIIChar flags the bytes of w that are 0 or above 0x7f.
func notASCIIChar(w uint64) uint64 { return ((w-ones)&^w | w) & highs }

// word is the word of b (shorter than 8 bytes) padded with pass.
func word(b []byte) uint64 {
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], pass)
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

// asciiRun returns the length of the run of printable ASCII (0x20 to
// 0x7e) that b starts with.
func asciiRun(b []byte) int {
	n := len(b)
	if n < 8 {
		return min(n, bits.TrailingZeros64(notPrintable(word(b)))/8)
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		if m := notPrintable(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	if i == n {
		return n
	}
	// The last word overlaps bytes that passed; they are shifted out.
	if m := notPrintable(binary.LittleEndian.Uint64(b[n-8:])) >> (8 * (i - (n - 8))); m != 0 {
		return i + bits.TrailingZeros64(m)/8
	}
	return n
}

// special returns the index of the first byte of b that is 0 or above
// 0x7f, or len(b): in a line's cells, the first that is not an ASCII
// character.
func special(b []byte) int {
	n := len(b)
	if n < 8 {
		return min(n, bits.TrailingZeros64(notASCIIChar(word(b)))/8)
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		if m := notASCIIChar(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	if i == n {
		return n
	}
	if m := notASCIIChar(binary.LittleEndian.Uint64(b[n-8:])) >> (8 * (i - (n - 8))); m != 0 {
		return i + bits.TrailingZeros64(m)/8
	}
	return n
}
