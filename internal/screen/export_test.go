package screen

import "fmt"

// HistoryLen is how many bytes of history s holds, for the bound tests.
func HistoryLen(s *Screen) int { return len(s.hist) }

// CheckLines returns an error when a line of s (of the screen shown, or
// of the main one behind the alternate screen) that is not mixed holds
// anything but ASCII characters in the cells it used: its text would be
// wrong.
func CheckLines(s *Screen) error {
	grids := [][]*line{s.grid}
	if s.main != nil {
		grids = append(grids, s.main.grid)
	}
	for _, g := range grids {
		for y, l := range g {
			if l.mixed {
				continue
			}
			for x, c := range l.cells[:min(l.used, len(l.cells))] {
				if c == 0 || c >= 0x80 {
					return fmt.Errorf("row %d, column %d: cell %#x in a line that is not mixed", y, x, c)
				}
			}
		}
	}
	return nil
}
