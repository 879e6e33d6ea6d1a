package login

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/acpterm/acpterm/acp"
)

// authCandidates are the methods that keep returns true for.
func authCandidates(opts []acp.AuthOption, keep func(*acp.AuthOption) bool) []*acp.AuthOption {
	var out []*acp.AuthOption
	for i := range opts {
		if keep(&opts[i]) {
			out = append(out, &opts[i])
		}
	}
	return out
}

// askAuthMethod shows cands as a numbered list on out and reads the
// user's choice from in, a terminal: a number or a method ID; Enter (or
// the end of input) chooses none, which is a nil method. When ctx ends
// first it returns ctx's error; the terminal is then closed, since only
// that ends a pending read.
func askAuthMethod(ctx context.Context, in io.ReadCloser, out io.Writer, header string, cands []*acp.AuthOption) (*acp.AuthOption, error) {
	var b strings.Builder
	b.WriteString(header + "\n")
	for i, o := range cands {
		fmt.Fprintf(&b, "  %d) %s\n", i+1, describeAuth(o))
	}
	_, _ = io.WriteString(out, b.String())
	r := startLineReader(in)
	defer r.stop()
	for {
		fmt.Fprintf(out, "method [1-%d, Enter for none]: ", len(cands))
		line, ok := r.next(ctx)
		if !ok {
			_, _ = io.WriteString(out, "\n")
			return nil, ctx.Err() // nil at the end of input
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return nil, nil
		}
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(cands) {
			return cands[n-1], nil
		}
		for _, o := range cands {
			if line == string(o.ID) {
				return o, nil
			}
		}
	}
}

// lineReader reads lines from a terminal one at a time, only when asked:
// it never reads ahead, so what follows belongs to the next reader (the
// permission prompter, a login command). stop closes the terminal if a
// read is still pending, and joins the goroutine.
type lineReader struct {
	in    io.ReadCloser
	want  chan struct{}
	lines chan string
	quit  chan struct{}
	done  chan struct{}
	busy  bool // a line was asked for and not yet delivered
}

func startLineReader(in io.ReadCloser) *lineReader {
	r := &lineReader{in: in, want: make(chan struct{}), lines: make(chan string), quit: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// maxAnswer bounds the bytes kept of one answer line.
const maxAnswer = 4096

func (r *lineReader) loop() {
	defer close(r.done)
	defer close(r.lines)
	for {
		select {
		case <-r.want:
		case <-r.quit:
			return
		}
		// A byte at a time, so that nothing past the newline is taken; a
		// terminal in canonical mode hands over one line per read anyway.
		var line []byte
		var c [1]byte
		for {
			n, err := r.in.Read(c[:])
			if n == 1 && c[0] == '\n' {
				break
			}
			if n == 1 && len(line) < maxAnswer {
				line = append(line, c[0])
			}
			if err != nil {
				return
			}
		}
		select {
		case r.lines <- string(line):
		case <-r.quit:
			return
		}
	}
}

// next returns the next line; false at the end of input or when ctx ends.
func (r *lineReader) next(ctx context.Context) (string, bool) {
	if !r.busy {
		select {
		case r.want <- struct{}{}:
			r.busy = true
		case <-r.done:
			return "", false
		case <-ctx.Done():
			return "", false
		}
	}
	select {
	case line, ok := <-r.lines:
		r.busy = false
		return line, ok
	case <-ctx.Done():
		return "", false
	}
}

func (r *lineReader) stop() {
	close(r.quit)
	if r.busy {
		// Blocked in Read: only closing the terminal ends it. The caller
		// gave up (interrupted), so the terminal is not needed any more.
		_ = r.in.Close()
	}
	<-r.done
}
