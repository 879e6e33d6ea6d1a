//go:build unix

package client

import (
	"errors"
	"syscall"
)

// openNoBlock keeps an open from waiting on a FIFO's other end and from
// making a tty the controlling terminal.
const openNoBlock = syscall.O_NONBLOCK | syscall.O_NOCTTY

// isNoDevice reports ENXIO: open(2) of a socket, or of a FIFO for writing
// with no reader.
func isNoDevice(err error) bool { return errors.Is(err, syscall.ENXIO) }
