package client

import (
	"io"
	"sync"

	"golang.org/x/term"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/permission"
)

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
// at a line with text clears it), and permission.ErrStopped when stop or
// cancel is closed.
type lineEditor struct {
	p    *permission.Prompter
	t    *term.Terminal
	stop <-chan struct{}
	// complete, when set, completes the line on Tab.
	complete func(line string) (string, bool)

	cancel  <-chan struct{} // of the read in progress
	pending []byte          // keys read and not yet handed over
	eofNext bool            // Ctrl-C at an empty line: hand over Ctrl-D

	mu        sync.Mutex
	prompting bool // a line is being read: the prompt is on the screen
	hidden    bool // the prompt line was erased for a write (hide)
	out       io.Writer
}

func newLineEditor(p *permission.Prompter, out io.Writer, stop <-chan struct{}) *lineEditor {
	e := &lineEditor{p: p, stop: stop, out: out}
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
	// Without raw mode (not a terminal) lines still come, after Enter,
	// with the terminal's own echo and editing.
	if restore, err := e.p.Raw(); err == nil {
		defer restore()
	}
	e.mu.Lock()
	e.prompting = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.prompting = false
		e.mu.Unlock()
	}()
	return e.t.ReadLine()
}

// leaveLine ends the prompt line that Ctrl-D left the cursor on, as a
// shell does, so that what acpterm prints as it ends starts a line of
// its own. Without a terminal the line was never drawn.
func (e *lineEditor) leaveLine() {
	if e.p.Terminal() {
		_, _ = io.WriteString(e.out, "\n")
	}
}

// Output printed while the prompt line is shown (the agent's late
// updates, log lines) would land on it and leave the typed text at the
// wrong column. Such output goes through the editor instead: write erases
// the prompt and what was typed, prints, and draws them again below
// (term.Terminal.Write does exactly that); hide and show do the same
// around a write the editor cannot make itself (stderr's).

// write prints p to the terminal, above the prompt line when it is
// shown; ok is false, and nothing is written, when it is not.
func (e *lineEditor) write(p []byte) (n int, ok bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.prompting {
		return 0, false, nil
	}
	if e.hidden {
		// Erased already (hide): p goes where the prompt was, and show
		// draws it again.
		n, err = writeCRLF(e.out, p)
		return n, true, err
	}
	n, err = e.t.Write(p)
	return n, true, err
}

// writeCRLF writes p in raw mode's terms: each newline as CR LF.
func writeCRLF(w io.Writer, p []byte) (int, error) {
	b := make([]byte, 0, len(p)+8)
	for _, c := range p {
		if c == '\n' {
			b = append(b, '\r')
		}
		b = append(b, c)
	}
	if _, err := w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// hide erases the prompt line, if it is shown, for a write that does not
// go through the editor, and returns the function that draws it again.
// The prompt and the text typed are assumed to fit on one row (a longer
// line is drawn again below what it wrapped to).
func (e *lineEditor) hide() (show func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.prompting || e.hidden {
		return func() {}
	}
	e.hidden = true
	_, _ = io.WriteString(e.out, "\r\x1b[K")
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.hidden = false
			if e.prompting {
				// The cursor is at the start of an empty row: Write's
				// erase finds nothing there, and it redraws the prompt
				// and the line.
				_, _ = e.t.Write(nil)
			}
		})
	}
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
		b[0] = permission.KeyCtrlD
		return 1, nil
	}
	if len(e.pending) == 0 {
		keys, err := e.p.NextKeys(e.stop, e.cancel)
		if err != nil {
			return 0, err
		}
		e.pending = keys
	}
	n := 0
	for n < len(b) && len(e.pending) > 0 {
		c := e.pending[0]
		e.pending = e.pending[1:]
		if c == permission.KeyCtrlC {
			b[n] = ctrlCKey
			n++
			break
		}
		b[n] = c
		n++
	}
	return n, nil
}
