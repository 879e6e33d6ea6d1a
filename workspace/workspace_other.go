//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

// openNoBlock: no FIFO or tty semantics to guard against in an open here.
const openNoBlock = 0

func isNoDevice(err error) bool { return false }

// keepOwner: no Unix owner to keep here.
func keepOwner(f *os.File, old fs.FileInfo) {}

// fileKey: no device and inode here; idSet compares with os.SameFile.
type fileKey struct{}

func keyOf(fi fs.FileInfo) (fileKey, bool) { return fileKey{}, false }
