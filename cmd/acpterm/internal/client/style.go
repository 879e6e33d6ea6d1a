package client

// style paints text with ANSI SGR sequences, or leaves it plain. With the
// live region's redraw (render_text.go), these are the only escape
// sequences acpterm writes: text from the agent reaches them only through
// internal/text/textsafe, so it can never add its own.
type style struct{ on bool }

func (s style) wrap(code, text string) string {
	if !s.on || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s style) bold(t string) string   { return s.wrap("1", t) }
func (s style) dim(t string) string    { return s.wrap("2", t) }
func (s style) red(t string) string    { return s.wrap("31", t) }
func (s style) green(t string) string  { return s.wrap("32", t) }
func (s style) yellow(t string) string { return s.wrap("33", t) }
func (s style) cyan(t string) string   { return s.wrap("36", t) }

// ColorEnabled decides whether to colour the output: only on a terminal,
// never with --no-color, and never when NO_COLOR is set to anything but
// the empty string (https://no-color.org).
func ColorEnabled(isTTY, noColorFlag bool, getenv func(string) string) bool {
	return isTTY && !noColorFlag && getenv("NO_COLOR") == ""
}
