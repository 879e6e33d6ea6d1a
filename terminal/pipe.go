package terminal

import "os"

const (
	// minReadBuf is the first read buffer: most commands print little.
	minReadBuf = 4 << 10
	// maxReadBuf is Linux's default pipe buffer: a read never returns more.
	// (Enlarging the pipe with F_SETPIPE_SZ measured no faster.)
	maxReadBuf = 64 << 10
)

// nextReadBuf returns buf, or a buffer twice its size when a read of n
// bytes filled it and it is below maxReadBuf: buffers grow only for
// commands that keep the pipe full.
func nextReadBuf(buf []byte, n int) []byte {
	if n == len(buf) && len(buf) < maxReadBuf {
		return make([]byte, 2*len(buf))
	}
	return buf
}

// copyFile hands write each chunk read from f until end of file, an error
// or f's read deadline, and returns the last buffer it read into and the
// error that ended the copy (io.EOF at end of file).
func copyFile(f *os.File, write func([]byte)) ([]byte, error) {
	buf := make([]byte, minReadBuf)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			write(buf[:n])
			buf = nextReadBuf(buf, n)
		}
		if err != nil {
			return buf, err
		}
	}
}
