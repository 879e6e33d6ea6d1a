//go:build !unix

package client

import "os"

// notifyResize has no resizes to deliver outside Unix, where acpterm
// attaches to no terminal.
func notifyResize() (<-chan os.Signal, func()) { return nil, func() {} }
