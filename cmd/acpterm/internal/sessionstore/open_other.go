//go:build !unix

package sessionstore

// openFlags: there are no FIFOs to block on here.
const openFlags = 0
