//go:build unix

package client

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// notifyResize delivers the user's terminal's resizes (SIGWINCH) until
// stop is called.
func notifyResize() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGWINCH)
	return ch, func() { signal.Stop(ch) }
}
