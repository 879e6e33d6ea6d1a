package screen

// HistoryLen is how many bytes of history s holds, for the bound tests.
func HistoryLen(s *Screen) int { return len(s.hist) }
