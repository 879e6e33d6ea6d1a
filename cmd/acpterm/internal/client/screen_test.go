package client

import (
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/expect"
)

// screen is an io.Writer that tests wait on: the terminal a run asks and
// draws its prompt on.
type screen struct{ *expect.Buffer }

func newScreen() *screen { return &screen{expect.NewBuffer()} }

// expect waits until what was written since the last match contains want.
func (s *screen) expect(t *testing.T, want string) {
	t.Helper()
	s.Expect(t, want, 10*time.Second)
}
