package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/probe"
)

// commandFlags are the flag sets of the commands, as each command's help
// prints them; nil for a command that takes no flags.
func commandFlags() map[string]*flag.FlagSet {
	return map[string]*flag.FlagSet{
		"run":         newRunFlags(io.Discard).fs,
		"sessions":    newSessionsFlags(io.Discard).fs,
		"agents":      newAgentsFlags(io.Discard),
		"login":       newLoginFlags(io.Discard).fs,
		"agent":       newAgentFlags(io.Discard).fs,
		"demo":        newDemoFlags(io.Discard).fs,
		"probe":       newProbeFlags(io.Discard).fs,
		"sandbox":     newSandboxFlags(io.Discard).FlagSet,
		"exec-server": newExecServerFlags(io.Discard).fs,
		"mcp":         newMCPFlags(io.Discard).fs,
		"version":     nil,
		"help":        nil,
	}
}

// helpCommands are the commands the top-level help lists.
func helpCommands() []string {
	var cmds []string
	for _, m := range regexp.MustCompile(`(?m)^  acpterm ([a-z-]+)`).FindAllStringSubmatch(mainUsage, -1) {
		if !slices.Contains(cmds, m[1]) {
			cmds = append(cmds, m[1])
		}
	}
	return cmds
}

// docSection is one "## acpterm CMD" section of docs/cli.md.
type docSection struct {
	title string
	body  string
}

// cliSections splits the command reference into its "## " sections,
// keyed by the commands their titles name ("acpterm version and acpterm
// help" documents two).
func cliSections(doc string) map[string]docSection {
	sections := map[string]docSection{}
	name := regexp.MustCompile(`acpterm ([a-z-]+)`)
	for _, part := range strings.Split(doc, "\n## ")[1:] {
		title, body, _ := strings.Cut(part, "\n")
		for _, m := range name.FindAllStringSubmatch(title, -1) {
			sections[m[1]] = docSection{title: title, body: body}
		}
	}
	return sections
}

// flagRow matches a row of a flag table: its first cell names the flag,
// with its aliases, in backquotes.
var flagRow = regexp.MustCompile("^\\| (`-[^|]*)\\|")

// flagName is the name in a flag's spelling: "--sandbox-agent[=false]"
// and "--cwd DIR" give "sandbox-agent" and "cwd".
var flagName = regexp.MustCompile("^`--?([a-z0-9][a-z0-9-]*)")

// flagDoc is what a section's tables say of one flag: in how many rows,
// and the default cell (the last) of its row.
type flagDoc struct {
	rows int
	def  string
}

// documentedFlags are the flags a section's tables document.
func documentedFlags(body string) map[string]*flagDoc {
	flags := map[string]*flagDoc{}
	for line := range strings.Lines(body) {
		m := flagRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(strings.TrimSpace(line), `\|`, "/"), "|")
		def := cells[len(cells)-2]
		for _, cell := range strings.Split(m[1], ", ") {
			if n := flagName.FindStringSubmatch(strings.TrimSpace(cell)); n != nil {
				if flags[n[1]] == nil {
					flags[n[1]] = &flagDoc{}
				}
				flags[n[1]].rows++
				flags[n[1]].def = def
			}
		}
	}
	return flags
}

// shownDefault is a flag's default as its row must show it, or "" for a
// switch or a flag whose default is nothing.
func shownDefault(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	switch f.DefValue {
	case "", "0", "0s", "[]":
		return ""
	}
	return f.DefValue
}

// checkCLIDoc returns what disagrees between the command reference doc
// and the flag sets cmds: a command of the help without a section, a
// flag without a row in its command's section or with two, a row for a
// flag that does not exist.
func checkCLIDoc(doc string, cmds map[string]*flag.FlagSet, listed []string) []string {
	var problems []string
	sections := cliSections(doc)
	for _, cmd := range listed {
		if _, ok := cmds[cmd]; !ok {
			problems = append(problems, fmt.Sprintf("acpterm %s is in acpterm help but not in this test's commandFlags", cmd))
		}
	}
	for cmd, fs := range cmds {
		sec, ok := sections[cmd]
		if !ok {
			problems = append(problems, fmt.Sprintf("acpterm %s has no section (## acpterm %s)", cmd, cmd))
			continue
		}
		doc := documentedFlags(sec.body)
		if fs != nil {
			fs.VisitAll(func(f *flag.Flag) {
				d := doc[f.Name]
				switch {
				case d == nil:
					problems = append(problems, fmt.Sprintf("acpterm %s --%s is not documented in ## %s", cmd, f.Name, sec.title))
				case d.rows > 1:
					problems = append(problems, fmt.Sprintf("acpterm %s --%s is documented %d times in ## %s", cmd, f.Name, d.rows, sec.title))
				case !strings.Contains(d.def, shownDefault(f)):
					problems = append(problems, fmt.Sprintf("acpterm %s --%s defaults to %s, which its row in ## %s does not say (%q)", cmd, f.Name, f.DefValue, sec.title, d.def))
				}
			})
		}
		for name := range doc {
			if fs == nil || fs.Lookup(name) == nil {
				problems = append(problems, fmt.Sprintf("## %s documents --%s, which acpterm %s does not have", sec.title, name, cmd))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// TestCLIDocs: every command acpterm's help lists has a section in
// docs/cli.md, every flag of every command has exactly one row in its
// command's table there, which shows its default, and every row is a
// flag the command has.
func TestCLIDocs(t *testing.T) {
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkCLIDoc(string(b), commandFlags(), helpCommands()) {
		t.Error(p)
	}
}

// TestCLIDocsCheckFails: the check above fails for a flag added to a
// command but not documented, a documented flag that is gone, a default
// that changed, and a command without a section.
func TestCLIDocsCheckFails(t *testing.T) {
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	cmds := commandFlags()
	cmds["demo"].Bool("undocumented-flag", false, "a flag nobody documented")
	got := checkCLIDoc(string(b), cmds, helpCommands())
	want := "acpterm demo --undocumented-flag is not documented in ## acpterm demo"
	if !slices.Contains(got, want) {
		t.Errorf("an undocumented flag: got %q, want %q among them", got, want)
	}

	cmds = commandFlags()
	doc := strings.Replace(string(b), "| `--keep-going` |", "| `--keep-going` |\n| `--gone-flag` | no more | |", 1)
	got = checkCLIDoc(doc, cmds, helpCommands())
	want = "## acpterm agent documents --gone-flag, which acpterm agent does not have"
	if !slices.Contains(got, want) {
		t.Errorf("a flag that does not exist: got %q, want %q among them", got, want)
	}

	doc = strings.Replace(string(b), "when a command is killed | `2s` |", "when a command is killed | `3s` |", 1)
	got = checkCLIDoc(doc, cmds, helpCommands())
	want = "acpterm run --kill-grace defaults to 2s, which its row in ## acpterm run does not say (\" `3s` \")"
	if !slices.Contains(got, want) {
		t.Errorf("a wrong default: got %q, want %q among them", got, want)
	}

	got = checkCLIDoc(string(b), cmds, append(helpCommands(), "frobnicate"))
	want = "acpterm frobnicate is in acpterm help but not in this test's commandFlags"
	if !slices.Contains(got, want) {
		t.Errorf("a command without a section: got %q, want %q among them", got, want)
	}
}

// TestDocsProbeCases: the table of probe cases in docs/protocol.md is
// the probe's suite, in order, each with its kind and rule.
func TestDocsProbeCases(t *testing.T) {
	b, err := os.ReadFile(repoRoot + "/docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| case | kind | rule | acpterm |\n| --- | --- | --- | --- |\n")
	if !ok {
		t.Fatal("docs/protocol.md has no table of probe cases")
	}
	var got []string
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(line, " | ")
		got = append(got, strings.Join(cells[:3], " | ")+" |")
	}
	var want []string
	for _, c := range probe.Cases() {
		kind := "informational"
		if c.Normative {
			kind = "normative"
		}
		want = append(want, fmt.Sprintf("| `%s` | %s | %s |", c.ID, kind, c.Rule))
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/protocol.md's probe cases differ from the suite:\n got %q\nwant %q", got, want)
	}
}
