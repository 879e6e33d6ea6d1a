package client

import (
	"errors"
	"io"

	"golang.org/x/term"
)

// errStopped ends a line read that the session no longer waits for.
var errStopped = errors.New("stopped")

// ctrlCKey stands for Ctrl-C in what the line editor reads: term.Terminal
// would take Ctrl-C itself as the end of input, whatever the line holds,
// while a shell's Ctrl-C abandons the line being typed and quits only at
// an empty one. The unit separator is a key term.Terminal has no use for,
// so it reaches AutoCompleteCallback, which sees the line.
const ctrlCKey = 0x1f

// lineEditor reads lines typed at the terminal with term.Terminal's line
// editor: cursor keys, Home/End, word moves, Ctrl-U/K/W, and the history
// of the lines read (up and down). The terminal is in raw mode only while
// a line is read. Keys come through the prompter's reader, the one reader
// of the terminal, so that what is typed goes to whichever of the prompt
// line and a question is waiting.
//
// readLine returns io.EOF for Ctrl-D, or Ctrl-C, at an empty line (Ctrl-C
// at a line with text clears it), and errStopped when stop or cancel is
// closed.
type lineEditor struct {
	p    *prompter
	t    *term.Terminal
	stop <-chan struct{}
	// complete, when set, completes the line on Tab.
	complete func(line string) (string, bool)

	cancel  <-chan struct{} // of the read in progress
	pending []byte          // keys read and not yet handed over
	eofNext bool            // Ctrl-C at an empty line: hand over Ctrl-D
}

func newLineEditor(p *prompter, out io.Writer, stop <-chan struct{}) *lineEditor {
	e := &lineEditor{p: p, stop: stop}
	e.t = term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{e, out}, "")
	e.t.AutoCompleteCallback = e.key
	return e
}

// setWidth tells the editor the terminal's width, for wrapping long lines.
func (e *lineEditor) setWidth(cols, rows int) {
	if cols > 0 && rows > 0 {
		_ = e.t.SetSize(cols, rows)
	}
}

// readLine shows prompt and reads one line.
func (e *lineEditor) readLine(prompt string, cancel <-chan struct{}) (string, error) {
	e.cancel = cancel
	e.t.SetPrompt(prompt)
	if e.p.raw != nil {
		// Without raw mode (not a terminal) lines still come, after Enter,
		// with the terminal's own echo and editing.
		if restore, err := e.p.raw(); err == nil {
			defer restore()
		}
	}
	return e.t.ReadLine()
}

// key sees the keys term.Terminal does not handle itself.
func (e *lineEditor) key(line string, pos int, key rune) (string, int, bool) {
	switch {
	case key == ctrlCKey && line == "":
		e.eofNext = true
		return "", 0, false
	case key == ctrlCKey:
		return "", 0, true
	case key == '\t' && e.complete != nil:
		if s, ok := e.complete(line); ok {
			return s, len(s), true
		}
	}
	return "", 0, false
}

// Read hands term.Terminal the keys typed, Ctrl-C turned into ctrlCKey
// and ending the read, so that the callback deals with it before any key
// that follows.
func (e *lineEditor) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if e.eofNext {
		e.eofNext = false
		b[0] = keyCtrlD
		return 1, nil
	}
	if len(e.pending) == 0 {
		keys, err := e.p.nextKeys(e.stop, e.cancel)
		if err != nil {
			return 0, err
		}
		e.pending = keys
	}
	n := 0
	for n < len(b) && len(e.pending) > 0 {
		c := e.pending[0]
		e.pending = e.pending[1:]
		if c == keyCtrlC {
			b[n] = ctrlCKey
			n++
			break
		}
		b[n] = c
		n++
	}
	return n, nil
}

// nextKeys waits for the next keys typed, for a reader other than ask:
// io.EOF at the end of input, errStopped when stop or cancel is closed
// (either may be nil).
func (p *prompter) nextKeys(stop, cancel <-chan struct{}) ([]byte, error) {
	p.start()
	select {
	case keys, ok := <-p.keys:
		if !ok {
			return nil, io.EOF
		}
		return keys, nil
	case <-stop:
		return nil, errStopped
	case <-cancel:
		return nil, errStopped
	}
}
