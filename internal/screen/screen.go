// Package screen renders what a program wrote to a terminal as plain text:
// the lines that scrolled off the top, then the screen as it now stands.
//
// It is a screen model, not a terminal emulator: it keeps characters and
// where they are, and nothing of colours, attributes, modes or replies.
// Bytes are parsed by github.com/charmbracelet/x/ansi's parser, and the
// model acts on what changes the text: printable characters (wide ones
// take two cells, combining marks stay with their base), CR, LF, BS, TAB,
// cursor moves (CUP, HVP, CUU, CUD, CUF, CUB, CNL, CPL, CHA, HPA, VPA, the
// cursor saved and restored), erasing (ED, EL, ECH), inserting and
// deleting (ICH, DCH, IL, DL), scrolling (SU, SD, the scroll region of
// DECSTBM, IND, NEL, RI) and the alternate screen (modes 47, 1047, 1049).
// SGR and every other sequence are parsed and ignored.
//
// What the text holds:
//
//   - A line that scrolls off the top of the main screen goes to the
//     history, with its trailing blanks trimmed. A line the cursor wrapped
//     onto at the right margin continues the line above: the text has no
//     line break there.
//   - A progress bar redrawn after CR, or a full-screen redraw (ED 2 and
//     CUP), reads as its last state: only the screen holds it.
//   - The alternate screen is written over in place; when the program
//     leaves it, its last screen (blank lines at the end dropped) is
//     written to the main screen at the cursor, as if printed, so the text
//     of a full-screen program that has exited still shows what it last
//     showed, in the order it happened.
//   - Boxes drawn with DEC's line drawing set (ESC ( 0, as ncurses does
//     for xterm) read as the box-drawing characters they show.
//   - Memory is bounded whatever is written: the history keeps the newest
//     Limit bytes, and Text returns at most Limit bytes, the newest,
//     starting at a character. Truncated, once dropping has begun, stays
//     true.
//
// A Screen is not safe for concurrent use.
package screen

import (
	"unicode/utf8"

	"github.com/acpterm/acpterm/internal/text/utf8cut"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
	"github.com/mattn/go-runewidth"
)

// The largest screen a Screen models; sizes beyond are clamped, so that a
// size cannot make a screen take unbounded memory (5 MB of cells at most:
// a byte a cell, and four more on lines that hold characters beyond
// ASCII).
const (
	MaxCols = 1000
	MaxRows = 1000
)

// wideTail marks the right half of a wide character, whose rune is in the
// cell to its left. 0 is a blank cell.
const wideTail rune = -1

// A cell is a byte, the character itself when it is ASCII, so that runs of
// ASCII (most of what programs print) are copied in and out of a line
// whole; the other cells hold one of these, and their rune is in the
// line's runes.
const (
	cellRune     byte = 0x80 // a character beyond ASCII, in runes
	cellWideTail byte = 0xff // the right half of a wide character
)

// widths measures characters the same way whatever the locale (East Asian
// ambiguous characters are narrow, as most terminals draw them).
var widths = &runewidth.Condition{}

// line is one row of cells.
type line struct {
	// cells holds ASCII characters, 0 for a blank, cellRune and
	// cellWideTail.
	cells []byte
	// runes holds the characters of cellRune cells, by column; nil until
	// the line first holds one, then as long as cells.
	runes []rune
	// marks holds the combining marks that follow the character of a
	// cell, by column; nil on most lines.
	marks map[int][]rune
	// used bounds the cells ever written since the line was last blank:
	// those beyond are blank.
	used int
	// mixed: cells [0, used) may hold blanks and cells beyond ASCII. Until
	// then they are all ASCII characters, the line's text as it stands,
	// as they are while a program prints lines from their start.
	mixed bool
	// wrapped: the cursor wrapped onto this line at the right margin, so it
	// continues the line above.
	wrapped bool
}

// state is what the alternate screen swaps out.
type state struct {
	grid []*line
	// rowBuf is where slide moves grid when the array grid is in has no
	// room left after it; nil until then. Only this state refers to it.
	rowBuf         []*line
	x, y           int
	savedX, savedY int
	top, bot       int
}

// Screen is the model of one terminal's screen and history.
type Screen struct {
	cols, rows int
	state
	pendingWrap bool   // the last column was printed: the next character wraps first
	lineDrawing bool   // G0 is DEC's line drawing set: ASCII letters draw boxes
	main        *state // the main screen, while the alternate one is shown

	pend []byte // the start of a character that the last write cut

	limit     int
	hist      []byte // scrolled-off text; its newest limit bytes are kept
	truncated bool
	total     uint64

	p *ansi.Parser
	// params holds fastCSI's parameters: declared there, the array would
	// be cleared for every sequence.
	params [parser.MaxParamsSize]ansi.Param
}

// New returns a blank screen of cols by rows (each clamped to 1 and to
// MaxCols, MaxRows) whose text keeps the newest limit bytes (negative
// means 0).
func New(cols, rows, limit int) *Screen {
	s := &Screen{limit: max(limit, 0)}
	s.cols, s.rows = clampSize(cols, rows)
	s.grid = s.blankGrid()
	s.bot = s.rows - 1
	s.p = ansi.NewParser()
	// Only CSI parameters matter; string sequences (OSC, DCS, APC) are
	// skipped, and their data need not be kept beyond a token buffer.
	s.p.SetDataSize(64)
	s.p.SetHandler(ansi.Handler{
		Print:     s.print,
		Execute:   s.execute,
		HandleCsi: s.csi,
		HandleEsc: s.esc,
	})
	return s
}

func clampSize(cols, rows int) (int, int) {
	return min(max(cols, 1), MaxCols), min(max(rows, 1), MaxRows)
}

func (s *Screen) blankGrid() []*line {
	g := make([]*line, s.rows)
	for i := range g {
		g[i] = &line{cells: make([]byte, s.cols)}
	}
	return g
}

// Size returns the screen's columns and rows.
func (s *Screen) Size() (cols, rows int) { return s.cols, s.rows }

// Total is the number of bytes ever written.
func (s *Screen) Total() uint64 { return s.total }

// Write takes what the program wrote. It never fails; the error is for
// io.Writer.
func (s *Screen) Write(b []byte) (int, error) {
	s.total += uint64(len(b))
	s.feed(s.completeRune(b))
	return len(b), nil
}

// feed processes b. Text (outside sequences) goes around the parser:
// printable ASCII in runs, the common case, and other characters decoded
// here, so that invalid UTF-8 becomes U+FFFD (the parser would drop it, or
// take a stray byte for a C1 control). A character cut by the end of b
// waits in pend for the next write.
func (s *Screen) feed(b []byte) {
	for i := 0; i < len(b); {
		c := b[i]
		if s.p.State() != parser.GroundState {
			s.p.Advance(c)
			i++
			continue
		}
		if c < 0x20 || c == 0x7f {
			switch c {
			case '\r':
				// As execute does it, without the call: a progress bar
				// sends one for each redraw.
				s.x, s.pendingWrap = 0, false
				i++
				continue
			case '\n', '\b', '\t':
				// The common controls, as the parser would hand them on.
				s.execute(c)
				i++
				continue
			case 0x1b:
				if n := s.fastCSI(b[i:]); n > 0 {
					i += n
					continue
				}
			}
			s.p.Advance(c)
			i++
			continue
		}
		if c < 0x7f {
			j := i + 1 + asciiRun(b[i+1:])
			s.putASCII(b[i:j])
			i = j
			continue
		}
		if !utf8.FullRune(b[i:]) {
			s.pend = append(s.pend[:0], b[i:]...)
			return
		}
		r, n := utf8.DecodeRune(b[i:])
		s.print(r)
		i += n
	}
}

// fastCSI handles a CSI sequence at the start of b that has only decimal
// parameters (SGR, cursor moves, erasing: most of what programs send), as
// the parser would, and returns its length; 0 leaves b to the parser (a
// private or intermediate byte, sub-parameters, more parameters than the
// parser keeps, or a sequence that b cuts).
func (s *Screen) fastCSI(b []byte) int {
	if len(b) < 3 || b[1] != '[' {
		return 0
	}
	buf := &s.params
	n := 0
	cur := parser.MissingParam
	for i := 2; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			if cur == parser.MissingParam {
				cur = 0
			}
			cur = min(cur*10+int(c-'0'), parser.ParamMask-1)
		case c == ';':
			if n == len(buf)-1 {
				return 0
			}
			buf[n] = ansi.Param(cur)
			n++
			cur = parser.MissingParam
		case c == 'm':
			// SGR, the most common of all: colours and attributes, which
			// the model does not keep. As csi, it ends a pending wrap.
			s.pendingWrap = false
			return i + 1
		case c == 'K' && n == 0:
			// EL of one parameter or none, as csi and edit do it, without
			// their dispatch: a progress bar sends one for each redraw.
			if cur == parser.MissingParam {
				cur = 0
			}
			s.pendingWrap = false
			s.eraseLine(cur)
			return i + 1
		case c >= 0x40 && c <= 0x7e:
			params := buf[:0]
			if n > 0 || cur != parser.MissingParam {
				buf[n] = ansi.Param(cur)
				params = buf[:n+1]
			}
			s.csi(ansi.Cmd(c), params)
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// completeRune finishes the character that the last write cut, from the
// start of b, and returns the rest of b.
func (s *Screen) completeRune(b []byte) []byte {
	for len(s.pend) > 0 && len(b) > 0 {
		s.pend = append(s.pend, b[0])
		b = b[1:]
		if utf8.FullRune(s.pend) {
			r, n := utf8.DecodeRune(s.pend)
			s.print(r)
			rest := append([]byte(nil), s.pend[n:]...)
			s.pend = s.pend[:0]
			s.feed(rest) // what did not belong to it (an ESC, say)
		}
	}
	return b
}

// Text returns the history then the screen, each line's trailing blanks
// trimmed and blank lines at the end dropped (a line break after the last
// line when the cursor stands below it): at most the newest limit bytes,
// starting at a character, and whether older text was dropped.
func (s *Screen) Text() (string, bool) {
	screen := s.screenText()
	var b []byte
	if len(screen) < s.limit {
		b = utf8cut.Tail(s.hist, s.limit-len(screen))
	}
	out := string(b) + string(utf8cut.Tail(screen, s.limit))
	cut := len(out) < len(s.hist)+len(screen)
	if cut {
		s.truncated = true
	}
	return out, s.truncated
}

// screenText renders the visible screen.
func (s *Screen) screenText() []byte {
	last := -1
	for i := range s.grid {
		if !s.grid[i].blank() {
			last = i
		}
	}
	var b []byte
	for i := 0; i <= last; i++ {
		next := i+1 < len(s.grid) && s.grid[i+1].wrapped
		b = s.grid[i].appendTo(b, !next)
		if i < last && !next {
			b = append(b, '\n')
		}
	}
	if s.y > last && last >= 0 {
		b = append(b, '\n')
	}
	return b
}

func (l *line) blank() bool {
	for _, c := range l.cells[:min(l.used, len(l.cells))] {
		if c != 0 {
			return false
		}
	}
	return len(l.marks) == 0
}

// at is the character of cell i: 0 for a blank, wideTail for the right
// half of a wide character.
func (l *line) at(i int) rune {
	switch c := l.cells[i]; {
	case c < utf8.RuneSelf:
		return rune(c)
	case c == cellWideTail:
		return wideTail
	default:
		return l.runes[i]
	}
}

// set puts r (a character, 0 or wideTail) in cell i.
func (l *line) set(i int, r rune) {
	switch {
	case r >= 0 && r < utf8.RuneSelf:
		l.cells[i] = byte(r)
	case r == wideTail:
		l.cells[i] = cellWideTail
	default:
		if l.runes == nil {
			l.runes = make([]rune, len(l.cells))
		}
		l.cells[i] = cellRune
		l.runes[i] = r
	}
}

// appendTo appends the line's text to dst, its trailing blanks trimmed
// when trim.
func (l *line) appendTo(dst []byte, trim bool) []byte {
	// Cells never written (or erased) are dropped at the end of any line,
	// as when a wide character wrapped early; spaces only when trimming.
	end := min(l.used, len(l.cells))
	for end > 0 && (l.cells[end-1] == 0 || trim && l.cells[end-1] == ' ') && (l.marks == nil || len(l.marks[end-1]) == 0) {
		end--
	}
	switch {
	case l.marks == nil && !l.mixed:
		// Most lines: the cells are the text.
		return append(dst, l.cells[:end]...)
	case l.marks == nil:
		// The runs of ASCII characters between blanks and characters
		// beyond ASCII are copied whole.
		for from := 0; ; {
			i := from + special(l.cells[from:end])
			dst = append(dst, l.cells[from:i]...)
			switch {
			case i == end:
				return dst
			case l.cells[i] != 0:
				return l.appendCells(dst, i, end)
			}
			dst = append(dst, ' ')
			from = i + 1
		}
	}
	return l.appendCells(dst, 0, end)
}

// appendCells appends the text of cells [from, end) to dst.
func (l *line) appendCells(dst []byte, from, end int) []byte {
	for i := from; i < end; i++ {
		r := l.at(i)
		switch {
		case r == wideTail:
			continue
		case r == 0:
			dst = append(dst, ' ')
		case r < utf8.RuneSelf:
			dst = append(dst, byte(r))
		default:
			dst = utf8.AppendRune(dst, r)
		}
		if l.marks != nil {
			for _, m := range l.marks[i] {
				dst = utf8.AppendRune(dst, m)
			}
		}
	}
	return dst
}

// pushHistory adds a line that scrolled off the top; cont says that the
// line below continues it.
func (s *Screen) pushHistory(l *line, cont bool) {
	s.hist = l.appendTo(s.hist, !cont)
	if !cont {
		s.hist = append(s.hist, '\n')
	}
	// Drop in bulk, once the history holds twice what is kept, so that
	// dropping costs O(1) a byte.
	if len(s.hist) > 2*s.limit+4096 {
		kept := utf8cut.Tail(s.hist, s.limit)
		s.hist = append(s.hist[:0], kept...)
		s.truncated = true
	}
}

// Resize changes the screen's size (clamped as for New). Lines are not
// reflowed: a narrower screen cuts them, a shorter one pushes its top
// lines into the history while the cursor would fall off the bottom, and
// drops lines at the bottom after that. The scroll region is reset.
func (s *Screen) Resize(cols, rows int) {
	cols, rows = clampSize(cols, rows)
	if s.main != nil {
		s.main.resize(s, cols, rows, false)
	}
	s.state.resize(s, cols, rows, s.main == nil)
	s.cols, s.rows = cols, rows
	s.pendingWrap = false
}

func (st *state) resize(s *Screen, cols, rows int, history bool) {
	for len(st.grid) > rows && st.y > 0 && st.y >= rows {
		if history {
			s.pushHistory(st.grid[0], len(st.grid) > 1 && st.grid[1].wrapped)
		}
		st.grid = st.grid[1:]
		st.y--
		st.savedY = max(st.savedY-1, 0)
	}
	if len(st.grid) > rows {
		st.grid = st.grid[:rows]
	}
	for len(st.grid) < rows {
		st.grid = append(st.grid, &line{cells: make([]byte, cols)})
	}
	for i := range st.grid {
		st.grid[i].resize(cols)
	}
	st.x, st.y = min(st.x, cols-1), min(st.y, rows-1)
	st.savedX, st.savedY = min(st.savedX, cols-1), min(st.savedY, rows-1)
	st.top, st.bot = 0, rows-1
}

func (l *line) resize(cols int) {
	switch {
	case cols < len(l.cells):
		// A wide character whose right half is cut goes.
		if l.cells[cols] == cellWideTail {
			l.cells[cols-1] = 0
			delete(l.marks, cols-1)
		}
		l.cells = l.cells[:cols:cols]
		if l.runes != nil {
			l.runes = l.runes[:cols:cols]
		}
		for c := range l.marks {
			if c >= cols {
				delete(l.marks, c)
			}
		}
	case cols > len(l.cells):
		l.cells = append(l.cells, make([]byte, cols-len(l.cells))...)
		if l.runes != nil {
			l.runes = append(l.runes, make([]rune, cols-len(l.runes))...)
		}
	}
}
