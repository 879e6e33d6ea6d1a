//go:build !linux

package terminal

import "os"

// copyPipe is copyFile; Linux has a faster path (pipe_linux.go).
func copyPipe(f *os.File, write func([]byte)) ([]byte, error) { return copyFile(f, write) }

// buffered is how many bytes a pipe holds: not asked here (0), so a drain
// is bounded by its deadline alone.
func buffered(uintptr) int { return 0 }
