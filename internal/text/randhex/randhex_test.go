package randhex

import (
	"regexp"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestString(t *testing.T) {
	hexRE := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for range 1000 {
		s := String(8)
		if !hexRE.MatchString(s) {
			t.Fatalf("String(8) = %q, want 16 hex digits", s)
		}
		if seen[s] {
			t.Fatalf("String(8) repeated %q within 1,000 calls", s)
		}
		seen[s] = true
	}
}
