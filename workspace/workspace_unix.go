//go:build unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openNoBlock keeps an open from waiting on a FIFO's other end and from
// making a tty the controlling terminal.
const openNoBlock = syscall.O_NONBLOCK | syscall.O_NOCTTY

// isNoDevice reports ENXIO: open(2) of a socket, or of a FIFO for writing
// with no reader.
func isNoDevice(err error) bool { return errors.Is(err, syscall.ENXIO) }

// keepOwner gives f the owner and group of old, the file it replaces, as
// far as allowed: only root may give a file away, but anyone may set a
// group they belong to. A failure leaves f ours, as a new file would be.
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	if f.Chown(int(st.Uid), int(st.Gid)) != nil {
		f.Chown(-1, int(st.Gid))
	}
}

// fileKey identifies a file: its device and inode.
type fileKey struct{ dev, ino uint64 }

func keyOf(fi fs.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{uint64(st.Dev), uint64(st.Ino)}, true
}
