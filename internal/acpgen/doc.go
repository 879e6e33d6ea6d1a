package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The schema's descriptions are Markdown written for the protocol's website. They become Go doc
// comments here: paragraphs are rewrapped, "- " and "1. " lists become Go doc lists, Markdown
// links become Go doc links with their targets listed at the end of the comment, `Name` of a
// $def becomes a doc link to its Go type, other `code` is quoted (or left bare when it is JSON
// or already quoted), and **bold** loses its stars. The words are the schema's.

// docWidth is the column a comment line should not pass; a tab counts as tabWidth columns.
const (
	docWidth = 100
	tabWidth = 4
)

// docBlock is a paragraph or one list item, its text in Go doc inline syntax.
type docBlock struct {
	text   string
	marker string // "" for a paragraph; "-" or "1." for a list item
}

// docText collects a doc comment before it is wrapped.
type docText struct {
	blocks []docBlock
	links  [][2]string // label, URL: the link definitions at the end
}

// para adds a paragraph already written as Go doc text.
func (d *docText) para(format string, args ...any) {
	d.blocks = append(d.blocks, docBlock{text: fmt.Sprintf(format, args...)})
}

// item adds a bullet item already written as Go doc text.
func (d *docText) item(format string, args ...any) {
	d.blocks = append(d.blocks, docBlock{text: fmt.Sprintf(format, args...), marker: "-"})
}

var (
	mdListItem = regexp.MustCompile(`^\s*([-*]|[0-9]+\.)\s+(.*)$`)
	mdLink     = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	mdCode     = regexp.MustCompile("`([^`]+)`")
	mdBold     = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	jsonLit    = regexp.MustCompile(`^(true|false|null|-?[0-9]+|\{\}|\[\])$`)
)

// markdown adds a schema description. goType maps a $def name to its Go type, if it has one.
func (d *docText) markdown(desc string, goType func(def string) (string, bool)) {
	var cur *docBlock
	open := false // cur may take more lines: no blank line since it began
	flush := func() {
		if cur != nil {
			cur.text = d.inline(cur.text, goType)
			d.blocks = append(d.blocks, *cur)
		}
		cur, open = nil, false
	}
	for line := range strings.SplitSeq(strings.ReplaceAll(desc, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		switch m := mdListItem.FindStringSubmatch(line); {
		case line == "":
			flush()
		case m != nil:
			// Go doc lists do not nest: a nested item becomes the next item of its list.
			flush()
			marker := m[1]
			if marker == "*" {
				marker = "-"
			}
			cur, open = &docBlock{text: m[2], marker: marker}, true
		case open:
			cur.text += " " + line
		default:
			cur, open = &docBlock{text: line}, true
		}
	}
	flush()
}

// inline turns the Markdown of one paragraph into Go doc text.
func (d *docText) inline(s string, goType func(string) (string, bool)) string {
	s = mdLink.ReplaceAllStringFunc(s, func(m string) string {
		sm := mdLink.FindStringSubmatch(m)
		label := strings.NewReplacer("`", "", "**", "").Replace(sm[1])
		for _, l := range d.links {
			if l[0] == label {
				if l[1] == sm[2] {
					return "[" + label + "]"
				}
				return label + " (" + sm[2] + ")" // a second target under the same label
			}
		}
		d.links = append(d.links, [2]string{label, sm[2]})
		return "[" + label + "]"
	})
	s = mdCode.ReplaceAllStringFunc(s, func(m string) string {
		code := m[1 : len(m)-1]
		if name, ok := goType(code); ok {
			return "[" + name + "]"
		}
		if jsonLit.MatchString(code) || strings.ContainsAny(code, `" `) {
			return code
		}
		return `"` + code + `"`
	})
	return mdBold.ReplaceAllString(s, "$1")
}

// lines renders the comment, wrapped, each line starting with indent + "//".
func (d *docText) lines(indent string) []string {
	width := docWidth - len("// ") - strings.Count(indent, "\t")*tabWidth
	var out []string
	blank := func() {
		if len(out) > 0 {
			out = append(out, indent+"//")
		}
	}
	for i, b := range d.blocks {
		if i == 0 || b.marker == "" || d.blocks[i-1].marker == "" {
			blank()
		}
		first, rest := "", ""
		switch {
		case b.marker == "-":
			first, rest = "  - ", "    "
		case b.marker != "":
			first = fmt.Sprintf("%3s ", b.marker)
			rest = strings.Repeat(" ", len(first))
		}
		for j, l := range wrap(b.text, width-len(first)) {
			lead := first
			if j > 0 {
				lead = rest
			}
			out = append(out, indent+"// "+lead+l)
		}
	}
	if len(d.links) > 0 {
		blank()
		for _, l := range d.links {
			out = append(out, indent+"// ["+l[0]+"]: "+l[1])
		}
	}
	return out
}

// wrap splits s into lines of at most width bytes where it can. It breaks only at spaces outside
// brackets, so that a doc link's text stays on one line, where Go doc can find it.
func wrap(s string, width int) []string {
	var words []string
	start, depth := 0, 0
	for i, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case r == ' ' && depth == 0:
			if i > start {
				words = append(words, s[start:i])
			}
			start = i + 1
		}
	}
	if start < len(s) {
		words = append(words, s[start:])
	}
	var out []string
	line := ""
	for _, w := range words {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			out = append(out, line)
			line = w
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// leadWith makes the first paragraph start with name when the schema's first sentence is a noun
// phrase with an indefinite article: "A diff representing file modifications." becomes
// "Diff is a diff representing file modifications.", as Go doc comments start. Other openings
// ("Capabilities supported by the agent.", "The current mode of the session has changed") would
// not survive the rewrite and are left as the schema wrote them; it reports whether it rewrote.
func (d *docText) leadWith(name string) bool {
	if len(d.blocks) == 0 || d.blocks[0].marker != "" {
		return false
	}
	t := d.blocks[0].text
	for _, art := range []string{"A ", "An "} {
		if strings.HasPrefix(t, art) {
			d.blocks[0].text = name + " is " + strings.ToLower(art) + t[len(art):]
			return true
		}
	}
	return false
}
