//go:build !unix

package remote

import (
	"os"
	"time"
)

// changeTime is a file's modification time where there is no ctime.
func changeTime(path string) (time.Time, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}
