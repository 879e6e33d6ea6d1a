package permission

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"
)

// Prompter asks questions on a terminal and takes one key for an answer:
// y (yes), n (no) or a (always), echoed as the word it stands for. Enter,
// space and tab are ignored; any other key is answered with a reminder of
// the three. One question is asked at a time; others wait their turn.
//
// When in is a terminal, it is in raw mode from just before a question is
// written until its key, so that the key counts without Enter and is not
// echoed; the saved mode is restored before the answer is echoed, on every
// way out (answer, cancel, end of input). Raw mode turns Ctrl-C into a byte instead of
// SIGINT: the prompter answers "no" to the question, after calling
// interrupt, which the client passes to NewPrompter as its own handling
// of Ctrl-C (cancel the turn; a second one kills the agent), so the
// cancel is under way before the agent hears "no". Ctrl-D, which
// raw mode also delivers as a byte, answers "no" as end of input does.
//
// The prompter's reader is the one reader of the terminal: the client's
// line editor, its /attach and the lines typed during a turn take their
// keys through it too (NextKeys, KeysBetweenQuestions), holding the
// prompter (Acquire) where a question must wait for them.
//
// When in is not a terminal (a pipe, a test), keys are read as they come:
// a line-buffered input delivers them after Enter.
type Prompter struct {
	in      io.Reader
	out     io.Writer
	suspend func() func() // clears the renderer's live region meanwhile
	// raw puts the terminal in raw mode and returns the function that
	// restores it; nil when in is not a terminal.
	raw func() (restore func(), err error)
	// interrupt is what Ctrl-C typed in raw mode does besides answering no.
	interrupt func()

	sem       chan struct{}
	askers    askGate // yields sem to an asker, ahead of the turn's reader
	startOnce sync.Once
	keys      chan []byte // what each read returned
	stop      chan struct{}
	done      chan struct{} // the reader ended; nil if never started
}

// Keys the prompter acts on besides y, n and a. In raw mode the terminal
// delivers Ctrl-C and Ctrl-D as these bytes, and Enter as a CR.
const (
	KeyCtrlC = 0x03
	KeyCtrlD = 0x04
)

// NewPrompter asks on out and reads answers from in. suspend, when not
// nil, clears the renderer's live region until the function it returns is
// called; interrupt is what Ctrl-C at a question does besides answering
// no, sending this process SIGINT when nil. Close closes in when it is an
// io.Closer and waits for the reader; a reader that cannot be closed (a
// blocking stdin) is left to end with the process.
func NewPrompter(in io.Reader, out io.Writer, suspend func() func(), interrupt func()) *Prompter {
	if suspend == nil {
		suspend = func() func() { return func() {} }
	}
	if interrupt == nil {
		interrupt = interruptSelf
	}
	return &Prompter{
		in: in, out: out, suspend: suspend, raw: rawMode(in), interrupt: interrupt,
		sem: make(chan struct{}, 1), stop: make(chan struct{}), askers: newAskGate(),
	}
}

// rawMode returns the function that puts in in raw mode, or nil when in is
// not a terminal. It reaches the descriptor through SyscallConn rather than
// Fd, which would switch the file to blocking mode, after which closing it
// no longer ends a pending read (see Close).
func rawMode(in io.Reader) func() (func(), error) {
	sc, ok := in.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	isTTY := false
	if rc.Control(func(fd uintptr) { isTTY = term.IsTerminal(int(fd)) }) != nil || !isTTY {
		return nil
	}
	return func() (func(), error) {
		var st *term.State
		var err error
		if cerr := rc.Control(func(fd uintptr) { st, err = term.MakeRaw(int(fd)) }); cerr != nil {
			return nil, cerr
		}
		if err != nil {
			return nil, err
		}
		var once sync.Once
		return func() {
			once.Do(func() { _ = rc.Control(func(fd uintptr) { _ = term.Restore(int(fd), st) }) })
		}, nil
	}
}

// interruptSelf sends this process the SIGINT that Ctrl-C would have sent
// outside raw mode. Where a process cannot signal itself (Windows), it
// does nothing; acpterm asks on no terminal there.
func interruptSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(os.Interrupt)
	}
}

func (p *Prompter) start() {
	p.startOnce.Do(func() {
		p.keys = make(chan []byte)
		p.done = make(chan struct{})
		go p.read()
	})
}

func (p *Prompter) read() {
	defer close(p.done)
	defer close(p.keys)
	for {
		// A fresh buffer each time: the one sent is the asker's.
		buf := make([]byte, 64)
		n, err := p.in.Read(buf)
		if n > 0 {
			select {
			case p.keys <- buf[:n]:
			case <-p.stop:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close stops reading answers.
func (p *Prompter) Close() {
	p.startOnce.Do(func() {}) // no reader from now on
	close(p.stop)
	if c, ok := p.in.(io.Closer); ok {
		_ = c.Close()
		if p.done != nil {
			<-p.done
		}
	}
}

// Terminal reports whether the prompter's input is a terminal, which Raw
// can put in raw mode.
func (p *Prompter) Terminal() bool { return p.raw != nil }

// errNotTerminal is Raw's error when the input is no terminal.
var errNotTerminal = errors.New("the input is not a terminal")

// Raw puts the terminal in raw mode and returns the function that
// restores its mode, for a reader of keys other than a question (a line
// read, an attachment), which holds the prompter meanwhile.
func (p *Prompter) Raw() (restore func(), err error) {
	if p.raw == nil {
		return nil, errNotTerminal
	}
	return p.raw()
}

// Suspend clears the renderer's live region until the function it
// returns is called, for what is written on the prompter's screen while
// the prompter is held.
func (p *Prompter) Suspend() (resume func()) { return p.suspend() }

// Out is where the prompter asks: its screen.
func (p *Prompter) Out() io.Writer { return p.out }

// ask asks question and waits for y, n or a. It gives up with
// answerCancelled when ctx ends or cancel is closed, and answers no at the
// end of input, on Ctrl-D, and on Ctrl-C (which also interrupts).
func (p *Prompter) ask(ctx context.Context, cancel <-chan struct{}, question string) answer {
	if !p.Acquire(ctx, cancel) {
		return answerCancelled
	}
	defer p.Release()
	p.start()
	resume := p.suspend()
	defer resume()
	// Keys typed before the question was asked are not its answer.
	select {
	case <-p.keys:
	default:
	}
	// Raw mode before the question: a key typed as soon as it shows must
	// not be echoed and held by the line discipline. Raw mode also stops
	// the terminal from turning "\n" into "\r\n"; write does it instead.
	raw, restoreRaw := false, func() {}
	if p.raw != nil {
		// Without raw mode the question still works, after Enter.
		if r, err := p.raw(); err == nil {
			raw, restoreRaw = true, r
		}
	}
	restore := func() {
		if raw {
			restoreRaw()
			raw = false
		}
	}
	defer restore()
	write := func(s string) {
		if raw {
			s = strings.ReplaceAll(s, "\n", "\r\n")
		}
		_, _ = io.WriteString(p.out, s)
	}
	// say writes the outcome, with the mode restored.
	say := func(s string) {
		restore()
		write(s)
	}
	write(question)
	for {
		select {
		case keys, ok := <-p.keys:
			if !ok {
				say("\n")
				return answerNo
			}
			// Keys that came in the same read as the answer are dropped
			// with it: a paste is not a series of answers.
			for _, k := range keys {
				switch k {
				case 'y', 'Y':
					say("yes\n")
					return answerYes
				case 'n', 'N', KeyCtrlD:
					say("no\n")
					return answerNo
				case 'a', 'A':
					say("always\n")
					return answerAlways
				case KeyCtrlC:
					say("^C: no, and the turn is interrupted\n")
					p.interrupt()
					return answerNo
				case '\r', '\n', ' ', '\t':
					// Enter after the key, from habit: not an answer.
				default:
					write("\n  please press y, n or a: ")
				}
			}
		case <-ctx.Done():
			say("(cancelled)\n")
			return answerCancelled
		case <-cancel:
			say("(cancelled)\n")
			return answerCancelled
		}
	}
}
