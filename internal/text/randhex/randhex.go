// Package randhex makes the random parts of acpterm's identifiers
// (terminal, session and tool-call IDs, cgroup names): hex, from
// crypto/rand, so they are neither guessable nor, in practice, repeated.
package randhex

import (
	"crypto/rand"
	"encoding/hex"
)

// String returns n random bytes as 2n lowercase hex digits.
func String(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b)
}
