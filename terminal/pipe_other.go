//go:build !linux

package terminal

import "os"

// copyPipe is copyFile; Linux has a faster path (pipe_linux.go).
func copyPipe(f *os.File, write func([]byte)) ([]byte, error) { return copyFile(f, write) }
