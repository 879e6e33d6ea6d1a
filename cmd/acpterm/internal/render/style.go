package render

// Style paints text with ANSI SGR sequences, or leaves it plain (the zero
// Style). With the live region's redraw (text_live.go), these are the only
// escape sequences acpterm writes: text from the agent reaches them only
// through internal/text/textsafe, so it can never add its own.
type Style struct {
	// On paints; see ColorEnabled.
	On bool
}

func (s Style) wrap(code, text string) string {
	if !s.On || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Bold is t in bold.
func (s Style) Bold(t string) string { return s.wrap("1", t) }

// Dim is t dimmed, for acpterm's own notes.
func (s Style) Dim(t string) string { return s.wrap("2", t) }

// Red is t in red: failures.
func (s Style) Red(t string) string { return s.wrap("31", t) }

// Green is t in green: successes.
func (s Style) Green(t string) string { return s.wrap("32", t) }

// Yellow is t in yellow: what runs, or was cut short.
func (s Style) Yellow(t string) string { return s.wrap("33", t) }

// ColorEnabled decides whether to colour the output: only on a terminal,
// never with --no-color, and never when NO_COLOR is set to anything but
// the empty string (https://no-color.org).
func ColorEnabled(isTTY, noColorFlag bool, getenv func(string) string) bool {
	return isTTY && !noColorFlag && getenv("NO_COLOR") == ""
}
