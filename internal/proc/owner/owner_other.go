//go:build !linux

package owner

// Dead is false: without /proc there is no start time to tell a dead
// owner from a reused PID, so nothing is removed.
func Dead(string) bool { return false }

// StartTime is 0: only Linux records it.
func StartTime(int) (uint64, error) { return 0, nil }
