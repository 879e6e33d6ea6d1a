//go:build !unix && !windows

package sessionstore

import "time"

// lockFile cannot lock here: the store relies on re-reading the file just
// before it replaces it.
func lockFile(path string, wait time.Duration) (func(), error) {
	return func() {}, nil
}
