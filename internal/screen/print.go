package screen

// Printing characters and moving to the next line.

// wrap moves to the start of the next line after the last column was
// printed, marking that line as the continuation of this one.
func (s *Screen) wrap() {
	s.pendingWrap = false
	s.x = 0
	s.lineFeed()
	s.grid[s.y].wrapped = true
}

// putASCII prints a run of printable ASCII characters.
func (s *Screen) putASCII(run []byte) {
	if s.lineDrawing {
		for _, c := range run {
			s.print(decGraphic(c))
		}
		return
	}
	for len(run) > 0 {
		if s.pendingWrap {
			s.wrap()
		}
		n := min(len(run), s.cols-s.x)
		l := s.grid[s.y]
		if s.x > l.used {
			l.mixed = true // blanks before the run
		}
		s.clearPairs(l, s.x, s.x+n)
		copy(l.cells[s.x:], run[:n])
		if l.marks != nil {
			for c := s.x; c < s.x+n; c++ {
				delete(l.marks, c)
			}
		}
		run = run[n:]
		s.x += n
		l.used = max(l.used, s.x)
		if s.x >= s.cols {
			s.x, s.pendingWrap = s.cols-1, true
		}
	}
}

// decGraphics is DEC's special graphics set (VT100 line drawing), which
// full-screen programs select for boxes (ESC ( 0), for 0x5f to 0x7e.
var decGraphics = []rune(" ◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·")

// decGraphic is the character c draws in DEC's line drawing set.
func decGraphic(c byte) rune {
	if c >= 0x5f && c <= 0x7e {
		return decGraphics[c-0x5f]
	}
	return rune(c)
}

// clearPairs blanks the other half of any wide character that cells
// [from, to) of l cut in two, before those cells are written over.
func (s *Screen) clearPairs(l *line, from, to int) {
	if from > 0 && from < len(l.cells) && l.cells[from] == cellWideTail {
		l.cells[from-1] = 0
	}
	if to < len(l.cells) && to > 0 && l.cells[to] == cellWideTail {
		l.cells[to] = 0
	}
}

// print is the parser's Print: one character of any width.
func (s *Screen) print(r rune) {
	w := 1
	if r >= 0x7f {
		w = widths.RuneWidth(r)
	}
	switch {
	case w == 0:
		s.mark(r)
		return
	case w == 2 && s.cols < 2:
		r, w = '\uFFFD', 1 // no room for it
	}
	if s.pendingWrap || s.x+w > s.cols {
		s.wrap()
	}
	l := s.grid[s.y]
	l.mixed = true
	s.clearPairs(l, s.x, s.x+w)
	l.set(s.x, r)
	if w == 2 {
		l.cells[s.x+1] = cellWideTail
	}
	if l.marks != nil {
		delete(l.marks, s.x)
		delete(l.marks, s.x+1)
	}
	s.x += w
	l.used = max(l.used, s.x)
	if s.x >= s.cols {
		s.x, s.pendingWrap = s.cols-1, true
	}
}

// maxMarks bounds the combining marks kept on one character, so that a
// stream of them cannot grow a cell without end.
const maxMarks = 8

// mark adds a combining mark (a zero-width character) to the character
// before the cursor; with none, it is dropped.
func (s *Screen) mark(r rune) {
	x := s.x - 1
	if s.pendingWrap {
		x = s.x
	}
	l := s.grid[s.y]
	if x >= 0 && l.cells[x] == cellWideTail {
		x--
	}
	if x < 0 || l.cells[x] == 0 {
		return
	}
	if l.marks == nil {
		l.marks = map[int][]rune{}
	}
	if len(l.marks[x]) < maxMarks {
		l.marks[x] = append(l.marks[x], r)
	}
}

// lineFeed moves the cursor down a line, scrolling the region when it is
// at the region's bottom.
func (s *Screen) lineFeed() {
	switch {
	case s.y == s.bot:
		s.scrollUp(1)
	case s.y < s.rows-1:
		s.y++
	}
}

// reverseIndex moves the cursor up a line, scrolling the region down at
// its top.
func (s *Screen) reverseIndex() {
	switch {
	case s.y == s.top:
		s.scrollDown(1)
	case s.y > 0:
		s.y--
	}
}

// scrollUp scrolls the region up by n lines. Lines leaving the top of the
// whole main screen go to the history.
func (s *Screen) scrollUp(n int) { s.scroll(n, s.top == 0 && s.main == nil) }

// scroll scrolls the region up by n lines, and puts the lines that leave
// it in the history when history is set.
func (s *Screen) scroll(n int, history bool) {
	n = min(n, s.bot-s.top+1)
	region := s.grid[s.top : s.bot+1]
	if history {
		for i := range n {
			s.pushHistory(region[i], i+1 < len(s.grid) && s.grid[i+1].wrapped)
		}
	}
	if len(region) == len(s.grid) {
		s.slide(n)
		return
	}
	// Rotate, reusing the scrolled-off lines' cells as the blank ones.
	if n == 1 {
		gone := region[0]
		copy(region, region[1:])
		gone.erase()
		region[len(region)-1] = gone
		return
	}
	gone := make([]*line, n)
	copy(gone, region[:n])
	copy(region, region[n:])
	for i := range gone {
		gone[i].erase()
		region[len(region)-n+i] = gone[i]
	}
}

// slide scrolls the whole screen up by n lines, reusing the scrolled-off
// lines' cells as the blank ones. Rather than every row moving up, the
// rows are a window that slides down an array with room after it: the
// lines that leave the top go just below the window. Once the room is
// used up the window moves back to the start of rowBuf, a screen's worth
// of room ahead of it, so that output that scrolls the screen line by
// line moves about a row a line.
func (st *state) slide(n int) {
	rows := len(st.grid)
	if cap(st.grid)-rows < n {
		if len(st.rowBuf) < rows+n {
			st.rowBuf = make([]*line, 2*rows+n)
		}
		st.grid = st.rowBuf[:copy(st.rowBuf, st.grid)]
	}
	g := st.grid[n : rows+n]
	for i, l := range st.grid[:n] {
		l.erase()
		g[rows-n+i] = l
	}
	st.grid = g
}

// scrollDown scrolls the region down by n lines; lines leaving its bottom
// are lost.
func (s *Screen) scrollDown(n int) {
	n = min(n, s.bot-s.top+1)
	region := s.grid[s.top : s.bot+1]
	gone := make([]*line, n)
	copy(gone, region[len(region)-n:])
	copy(region[n:], region[:len(region)-n])
	for i := range gone {
		gone[i].erase()
		region[i] = gone[i]
	}
}

// erase blanks the whole line.
func (l *line) erase() {
	clear(l.cells[:min(l.used, len(l.cells))])
	l.used = 0
	l.marks = nil
	l.mixed = false
	l.wrapped = false
}

// eraseCells blanks cells [from, to) of l, and the other halves of wide
// characters cut in two.
func (s *Screen) eraseCells(l *line, from, to int) {
	from, to = max(from, 0), min(to, len(l.cells))
	if from >= to {
		return
	}
	if from < l.used {
		l.mixed = true
	}
	s.clearPairs(l, from, to)
	clear(l.cells[from:max(from, min(to, l.used))]) // those beyond used are blank
	if l.marks == nil {
		return // ranging over a nil map still costs a call into the runtime
	}
	for c := range l.marks {
		if c >= from && c < to {
			delete(l.marks, c)
		}
	}
}
