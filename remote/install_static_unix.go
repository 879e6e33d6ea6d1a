//go:build unix

package remote

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// changeTime is a file's ctime: when its content or metadata last
// changed, which no one can set back (utimes sets the mtime, and moves
// the ctime to now).
func changeTime(path string) (time.Time, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return time.Time{}, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return time.Unix(st.Ctim.Unix()), nil
}
