//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollable returns stdin as a file whose Read a Close interrupts: the
// exec server must be able to stop reading a transport that stalled, and
// a blocking descriptor (what sshd and container engines hand over) would
// hold the read, and the exit, for ever.
func pollable(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok {
		return r
	}
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return r
	}
	// Not inherited: every command the server starts would hold the
	// client's request stream open, and could read requests off it.
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return r
	}
	return os.NewFile(uintptr(fd), f.Name())
}
