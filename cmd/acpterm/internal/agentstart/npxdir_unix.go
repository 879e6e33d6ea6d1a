//go:build unix

package agentstart

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByUs reports whether fi is owned by this process's effective user.
func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
