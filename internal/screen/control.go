package screen

import "github.com/charmbracelet/x/ansi"

// Control characters and escape sequences.

// execute is the parser's Execute: a C0 or C1 control character.
func (s *Screen) execute(b byte) {
	switch b {
	case '\r':
		s.x, s.pendingWrap = 0, false
	case '\n', '\v', '\f':
		s.pendingWrap = false
		s.lineFeed()
	case '\b':
		if s.pendingWrap {
			s.pendingWrap = false
		} else if s.x > 0 {
			s.x--
		}
	case '\t':
		s.pendingWrap = false
		s.x = min((s.x/8+1)*8, s.cols-1)
	}
}

// esc is the parser's HandleEsc.
func (s *Screen) esc(cmd ansi.Cmd) {
	if cmd.Intermediate() == '(' {
		// G0's character set: DEC's line drawing, or back to ASCII.
		s.lineDrawing = cmd.Final() == '0'
		return
	}
	if cmd.Intermediate() != 0 {
		return // other character sets and the like
	}
	s.pendingWrap = false
	switch cmd.Final() {
	case '7':
		s.savedX, s.savedY = s.x, s.y
	case '8':
		s.x, s.y = s.savedX, s.savedY
	case 'D':
		s.lineFeed()
	case 'E':
		s.x = 0
		s.lineFeed()
	case 'M':
		s.reverseIndex()
	case 'c':
		s.reset()
	}
}

// reset is RIS: a blank main screen, the history kept.
func (s *Screen) reset() {
	s.leaveAlt()
	s.state = state{grid: s.blankGrid(), bot: s.rows - 1}
	s.lineDrawing = false
}

// csi is the parser's HandleCsi.
func (s *Screen) csi(cmd ansi.Cmd, params ansi.Params) {
	if cmd.Intermediate() != 0 {
		return
	}
	switch cmd.Prefix() {
	case '?':
		s.privateMode(cmd.Final(), params)
		return
	case 0:
	default:
		return
	}
	// n is the first parameter as a count: absent or 0 mean 1. Parameters
	// are at most 65535 (the parser's limit); counts are clamped to the
	// screen below.
	n, _, _ := params.Param(0, 1)
	n = max(n, 1)
	s.pendingWrap = false
	if s.move(cmd.Final(), n, params) {
		return
	}
	s.edit(cmd.Final(), n, params)
}

// move handles the sequences that move the cursor, and reports whether
// the final byte was one.
func (s *Screen) move(final byte, n int, params ansi.Params) bool {
	switch final {
	case 'A': // CUU
		s.y = max(s.y-n, s.upperBound())
	case 'B': // CUD
		s.y = min(s.y+n, s.lowerBound())
	case 'C': // CUF
		s.x = min(s.x+n, s.cols-1)
	case 'D': // CUB
		s.x = max(s.x-n, 0)
	case 'E': // CNL
		s.x, s.y = 0, min(s.y+n, s.lowerBound())
	case 'F': // CPL
		s.x, s.y = 0, max(s.y-n, s.upperBound())
	case 'G', '`': // CHA, HPA
		s.x = min(n, s.cols) - 1
	case 'd': // VPA
		s.y = min(n, s.rows) - 1
	case 'H', 'f': // CUP, HVP
		col, _, _ := params.Param(1, 1)
		s.y, s.x = min(n, s.rows)-1, min(max(col, 1), s.cols)-1
	case 's':
		s.savedX, s.savedY = s.x, s.y
	case 'u':
		s.x, s.y = s.savedX, s.savedY
	default:
		return false
	}
	return true
}

// upperBound is as high as CUU moves: the region's top from within it.
func (s *Screen) upperBound() int {
	if s.y >= s.top {
		return s.top
	}
	return 0
}

// lowerBound is as low as CUD moves: the region's bottom from within it.
func (s *Screen) lowerBound() int {
	if s.y <= s.bot {
		return s.bot
	}
	return s.rows - 1
}

// edit handles the sequences that erase, insert, delete and scroll.
func (s *Screen) edit(final byte, n int, params ansi.Params) {
	l := s.grid[s.y]
	switch final {
	case 'J': // ED
		mode, _, _ := params.Param(0, 0)
		s.eraseDisplay(mode)
	case 'K': // EL
		mode, _, _ := params.Param(0, 0)
		s.eraseLine(mode)
	case 'X': // ECH
		s.eraseCells(l, s.x, s.x+n)
	case '@': // ICH
		n = min(n, s.cols-s.x)
		s.clearPairs(l, s.x, s.x)
		s.eraseCells(l, s.cols-n, s.cols) // what falls off the end
		copy(l.cells[s.x+n:], l.cells[s.x:s.cols-n])
		if l.runes != nil {
			copy(l.runes[s.x+n:], l.runes[s.x:s.cols-n])
		}
		clear(l.cells[s.x : s.x+n])
		l.marks = nil
		l.used = s.cols
		l.mixed = true
	case 'P': // DCH
		n = min(n, s.cols-s.x)
		s.clearPairs(l, s.x, s.x+n)
		copy(l.cells[s.x:], l.cells[s.x+n:])
		if l.runes != nil {
			copy(l.runes[s.x:], l.runes[s.x+n:])
		}
		clear(l.cells[s.cols-n:])
		l.marks = nil
		l.mixed = true
	case 'L', 'M': // IL, DL: the region from the cursor's line scrolls
		if s.y < s.top || s.y > s.bot {
			return
		}
		top := s.top
		s.top = s.y
		if final == 'L' {
			s.scrollDown(n)
		} else {
			s.scroll(n, false)
		}
		s.top = top
		s.x = 0
	case 'S': // SU
		s.scrollUp(n)
	case 'T': // SD
		s.scrollDown(n)
	case 'r': // DECSTBM
		top, _, _ := params.Param(0, 1)
		bot, _, _ := params.Param(1, s.rows)
		top, bot = max(top, 1)-1, min(max(bot, 1), s.rows)-1
		if top < bot {
			s.top, s.bot = top, bot
			s.x, s.y = 0, 0
		}
	}
}

// eraseDisplay is ED: 0 from the cursor, 1 to the cursor, 2 and 3 all.
func (s *Screen) eraseDisplay(mode int) {
	switch mode {
	case 0:
		s.eraseLine(0)
		for i := s.y + 1; i < s.rows; i++ {
			s.grid[i].erase()
		}
	case 1:
		s.eraseLine(1)
		for i := range s.y {
			s.grid[i].erase()
		}
	case 2, 3:
		for i := range s.grid {
			s.grid[i].erase()
		}
	}
}

// eraseLine is EL: 0 from the cursor, 1 to the cursor, 2 all.
func (s *Screen) eraseLine(mode int) {
	l := s.grid[s.y]
	switch mode {
	case 0:
		s.eraseCells(l, s.x, s.cols)
	case 1:
		s.eraseCells(l, 0, s.x+1)
	case 2:
		l.erase()
	}
}

// privateMode handles DECSET and DECRST of the alternate screen.
func (s *Screen) privateMode(final byte, params ansi.Params) {
	if final != 'h' && final != 'l' {
		return
	}
	for i := range params {
		switch params[i].Param(0) {
		case 47, 1047, 1049:
			if final == 'h' {
				s.enterAlt()
			} else {
				s.leaveAlt()
			}
		}
	}
}

// enterAlt shows a blank alternate screen, keeping the main one.
func (s *Screen) enterAlt() {
	if s.main != nil {
		return
	}
	main := s.state
	s.main = &main
	s.state = state{grid: s.blankGrid(), x: main.x, y: main.y, savedX: main.x, savedY: main.y, bot: s.rows - 1}
	s.pendingWrap = false
}

// leaveAlt goes back to the main screen, and writes the alternate
// screen's last text there at the cursor (see the package doc).
func (s *Screen) leaveAlt() {
	if s.main == nil {
		return
	}
	alt := s.grid
	s.state, s.main = *s.main, nil
	s.pendingWrap = false
	last := -1
	for i := range alt {
		if !alt[i].blank() {
			last = i
		}
	}
	if last < 0 {
		return
	}
	if s.x > 0 {
		s.x = 0
		s.lineFeed()
	}
	for i := 0; i <= last; i++ {
		l := alt[i]
		for c := range min(l.used, len(l.cells)) {
			r := l.at(c)
			if r == wideTail {
				continue
			}
			if r == 0 {
				r = ' '
			}
			s.print(r)
			for _, m := range l.marks[c] {
				s.print(m)
			}
		}
		s.pendingWrap = false
		s.x = 0
		s.lineFeed()
	}
}
