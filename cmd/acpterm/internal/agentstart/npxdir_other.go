//go:build !unix

package agentstart

import "io/fs"

// ownedByUs cannot tell the owner here; the directory is the user's own
// (%AppData%, the user's temporary directory).
func ownedByUs(fs.FileInfo) bool { return true }
