//go:build unix

package sessionstore

import "syscall"

// openFlags open the store without waiting: opening a FIFO to read blocks
// until something writes to it, and a file that is not regular is then
// refused (readBounded).
const openFlags = syscall.O_NONBLOCK
