//go:build windows

package terminal

import "os"

// drainReady is not needed on Windows: its pipes have no read deadlines.
func drainReady(*os.File, []byte, int, func([]byte)) {}
