//go:build !linux

package sandbox

// reservation is the placeholders of protected paths, which only the
// Linux sandbox makes.
type reservation struct{}

func (*reservation) release() {}
