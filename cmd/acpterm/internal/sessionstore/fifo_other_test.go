//go:build !unix

package sessionstore

import "testing"

// mkfifo skips: there are no FIFOs in the file system here.
func mkfifo(t *testing.T, path string) bool {
	t.Helper()
	t.Skip("no FIFOs here")
	return false
}
