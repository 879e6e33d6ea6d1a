//go:build !linux

package client

import "os"

// pending is the number of bytes waiting in the pipe f: unknown here (0),
// so that stderrPump.catchUp waits only for the read under way.
func pending(*os.File) int { return 0 }

// read reads f into buf, the pump marked waiting while it blocks.
func (p *stderrPump) read(f *os.File, buf []byte) (int, error) {
	p.set(true, false)
	n, err := f.Read(buf)
	p.set(false, false)
	return n, err
}
