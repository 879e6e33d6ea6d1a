//go:build !unix

package client

// openNoBlock: no FIFO or tty semantics to guard against in an open here.
const openNoBlock = 0

func isNoDevice(err error) bool { return false }
