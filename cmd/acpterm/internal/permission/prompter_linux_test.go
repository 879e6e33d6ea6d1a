//go:build linux

package permission

import (
	"context"
	"os"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestPrompterRawMode asks on a real pseudo-terminal: a question waits for
// its key in raw mode (one key, no Enter; Ctrl-C a byte, not SIGINT), and
// the terminal's mode is restored after every answer.
func TestPrompterRawMode(t *testing.T) {
	ptmx, tty, screen, copied := openScreenPTY(t)
	defer ptmx.Close()
	p := NewPrompter(tty, tty, nil, nil)
	if p.raw == nil {
		t.Fatal("a pseudo-terminal was not taken for a terminal")
	}
	interrupts := 0
	p.interrupt = func() { interrupts++ }
	defer func() {
		p.Close() // closes tty
		ptmx.Close()
		<-copied
	}()
	// The terminal's local modes, read through SyscallConn: Fd would make
	// the file blocking, and Close would no longer end its reader.
	rc, err := tty.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	lflag := func() uint32 {
		t.Helper()
		var tio *unix.Termios
		var err error
		if cerr := rc.Control(func(fd uintptr) { tio, err = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			t.Fatal(err)
		}
		return tio.Lflag
	}
	cooked := lflag()
	if cooked&unix.ICANON == 0 || cooked&unix.ISIG == 0 {
		t.Fatalf("the new terminal is not in cooked mode: lflag %#x", cooked)
	}
	ask := func() <-chan answer {
		ch := make(chan answer, 1)
		go func() { ch <- p.ask(context.Background(), nil, "allow? ") }()
		return ch
	}
	typeKeys := func(s string) {
		t.Helper()
		if _, err := ptmx.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		keys, echo string
		want       answer
		interrupts int
	}{
		{"y", "yes\r\n", answerYes, 0},
		{"a", "always\r\n", answerAlways, 0},
		// In raw mode Ctrl-C is a byte: answered no, then interrupted.
		{"\x03", "^C: no, and the turn is interrupted\r\n", answerNo, 1},
	} {
		ch := ask()
		screen.expect(t, "allow? ")
		// A key outside y/n/a is answered in raw mode: a line-buffered
		// terminal would hold it until Enter.
		typeKeys("x")
		screen.expect(t, "please press y, n or a: ")
		if l := lflag(); l&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
			t.Fatalf("asking, the terminal is not raw: lflag %#x", l)
		}
		typeKeys(tt.keys)
		if got := <-ch; got != tt.want {
			t.Fatalf("%q answered %v, want %v", tt.keys, got, tt.want)
		}
		screen.expect(t, tt.echo)
		if l := lflag(); l != cooked {
			t.Fatalf("after %q the mode was not restored: lflag %#x, want %#x", tt.keys, l, cooked)
		}
		if interrupts != tt.interrupts {
			t.Fatalf("after %q: %d interrupts, want %d", tt.keys, interrupts, tt.interrupts)
		}
		interrupts = 0
	}

	// A question cancelled while it waits restores the mode too.
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan answer, 1)
	go func() { ch <- p.ask(ctx, nil, "allow? ") }()
	screen.expect(t, "allow? ")
	typeKeys("x") // seen once raw mode is on
	screen.expect(t, "please press y, n or a: ")
	cancel()
	if got := <-ch; got != answerCancelled {
		t.Fatalf("cancelled question answered %v", got)
	}
	screen.expect(t, "(cancelled)\r\n")
	if l := lflag(); l != cooked {
		t.Fatalf("after a cancel the mode was not restored: lflag %#x, want %#x", l, cooked)
	}
}

// openScreenPTY opens a pseudo-terminal whose output is copied into a
// screen until its terminal side is closed; copied is closed then. The
// test is skipped where no pseudo-terminal can be had.
func openScreenPTY(t *testing.T) (ptmx, tty *os.File, s *screen, copied chan struct{}) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	s = newScreen()
	copied = make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			s.Write(buf[:n])
			if err != nil {
				return // EIO once the terminal's side is closed
			}
		}
	}()
	return ptmx, tty, s, copied
}
