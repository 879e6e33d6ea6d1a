package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// The user documentation is README.md and docs/*.md at the top of the
// module; these tests hold it to the code: the command reference
// (docs/cli.md) to the flag sets, the links to the files and headings
// they name, the README's test command to .ci/run.

const (
	repoRoot = "../.."
	cliDoc   = repoRoot + "/docs/cli.md"
)

// docFiles are the user documentation: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

// prose is a Markdown text without its fenced code blocks.
func prose(doc string) string {
	var b strings.Builder
	fenced := false
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
		}
	}
	return b.String()
}

var (
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// anchors are the heading anchors GitHub makes of a Markdown file:
// lower case, punctuation dropped, spaces as hyphens, repeats numbered.
func anchors(doc string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(prose(doc), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinks: every relative link of the documentation leads to a
// file of the repository and, with a #fragment into a Markdown file, to
// one of its headings.
func TestDocsLinks(t *testing.T) {
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := inlineCode.ReplaceAllString(prose(string(b)), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, frag, _ := strings.Cut(link, "#")
			dest := file
			if target != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
			}
			rel, _ := filepath.Rel(repoRoot, file)
			st, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %q: %v", rel, link, err)
				continue
			}
			if frag == "" || st.IsDir() || path.Ext(dest) != ".md" {
				continue
			}
			db, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(db))[frag] {
				t.Errorf("%s: link %q: %s has no heading #%s", rel, link, dest, frag)
			}
		}
	}
}

// foreignFlags are flags the documentation names that are other
// programs' (or acpterm's own --version, a command).
var foreignFlags = map[string]bool{
	"init":       true, // podman run --init
	"kubeconfig": true, // kubectl --kubeconfig
	"version":    true, // acpterm --version is acpterm version
}

// TestDocsFlagsExist: every flag the documentation names in backquotes
// (`--name`, `--name VALUE`, `--name=false`) is a flag of some command.
func TestDocsFlagsExist(t *testing.T) {
	known := map[string]bool{}
	for _, fs := range commandFlags() {
		if fs != nil {
			fs.VisitAll(func(f *flag.Flag) { known[f.Name] = true })
		}
	}
	named := regexp.MustCompile("`--([a-z0-9][a-z0-9-]*)([^`]*)`")
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, file)
		for _, m := range named.FindAllStringSubmatch(string(b), -1) {
			name, rest := m[1], m[2]
			if strings.HasSuffix(name, "-") && strings.HasPrefix(rest, "*") {
				continue // a family: `--remote-*`
			}
			if !known[name] && !foreignFlags[name] {
				t.Errorf("%s names --%s, which no acpterm command has", rel, name)
			}
		}
	}
}

// goSources are the Go files of the repository (its nested modules
// included, node_modules left out), by path.
func goSources(t *testing.T) map[string]string {
	t.Helper()
	srcs := map[string]string{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != repoRoot && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			srcs[p] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return srcs
}

// docNames calls check with each match of re in the documentation.
func docNames(t *testing.T, re *regexp.Regexp, check func(file, name string)) {
	t.Helper()
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, file)
		for _, name := range re.FindAllString(string(b), -1) {
			check(rel, name)
		}
	}
}

// TestDocsTestsExist: every test or benchmark the documentation names
// (TestX, BenchmarkX, or such a prefix in a -run or -bench pattern) is a
// function of the repository's tests, and
// every ACPTERM_ variable it names is one the code reads.
func TestDocsTestsExist(t *testing.T) {
	srcs := goSources(t)
	var funcs []string
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)[A-Za-z0-9_]*)\(`)
	for p, src := range srcs {
		if strings.HasSuffix(p, "_test.go") {
			for _, m := range decl.FindAllStringSubmatch(src, -1) {
				funcs = append(funcs, m[1])
			}
		}
	}
	docNames(t, regexp.MustCompile(`\b(?:Test|Benchmark)[A-Z][A-Za-z0-9_]*`), func(file, name string) {
		if !slices.ContainsFunc(funcs, func(f string) bool { return strings.HasPrefix(f, name) }) {
			t.Errorf("%s names %s, which is no test or benchmark of the repository", file, name)
		}
	})
	docNames(t, regexp.MustCompile(`\bACPTERM_[A-Z0-9_]*[A-Z0-9]`), func(file, name string) {
		for _, src := range srcs {
			if strings.Contains(src, `"`+name+`"`) {
				return
			}
		}
		t.Errorf("%s names $%s, which no Go file of the repository reads", file, name)
	})
}

// TestCIRunsREADMETestCommand: .ci/run runs exactly the test command the
// README gives at the top.
func TestCIRunsREADMETestCommand(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```sh\n")
	if !ok {
		t.Fatal("the README has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var want string
	for line := range strings.Lines(block) {
		cmd, _, _ := strings.Cut(line, "#")
		if cmd = strings.TrimSpace(cmd); strings.HasPrefix(cmd, "go test") {
			want = cmd
			break
		}
	}
	if want == "" {
		t.Fatalf("the README's first sh block has no go test command:\n%s", block)
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for line := range strings.Lines(string(ci)) {
		cmd := strings.TrimSpace(line)
		for _, sep := range []string{"||", "&&", ";", "|"} {
			cmd, _, _ = strings.Cut(cmd, sep)
		}
		if cmd = strings.TrimSpace(cmd); strings.HasPrefix(cmd, "go test") {
			ran = append(ran, cmd)
		}
	}
	if !slices.Contains(ran, want) {
		t.Errorf(".ci/run runs %q, not the README's %q", ran, want)
	}
}

// publicPackages are the module's importable packages with code of their
// own: directories with a Go file other than tests and doc.go, outside
// internal/, cmd/ and other modules.
func publicPackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	for p := range goSources(t) {
		dir, name := filepath.Split(p)
		rel, err := filepath.Rel(repoRoot, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if rel == "." || strings.HasSuffix(name, "_test.go") || name == "doc.go" || slices.Contains(pkgs, rel) {
			continue
		}
		if hidden := slices.ContainsFunc(strings.Split(rel, "/"), func(e string) bool {
			return e == "internal" || e == "cmd" || e == "testdata"
		}); hidden || otherModule(rel) {
			continue
		}
		pkgs = append(pkgs, rel)
	}
	sort.Strings(pkgs)
	return pkgs
}

// otherModule reports whether dir (relative to the root) lies in a module
// of its own.
func otherModule(dir string) bool {
	for d := dir; d != "." && d != "/"; d = path.Dir(d) {
		if _, err := os.Stat(filepath.Join(repoRoot, d, "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// TestREADMEPackages: the README's table of packages names every public
// package of the module, and nothing else.
func TestREADMEPackages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| package | what it is |\n| --- | --- |\n")
	if !ok {
		t.Fatal("the README has no table of packages")
	}
	var listed []string
	for line := range strings.Lines(table) {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		first := strings.Split(line, "|")[1]
		for _, m := range inlineCode.FindAllString(first, -1) {
			listed = append(listed, strings.Trim(m, "`"))
		}
	}
	sort.Strings(listed)
	if want := publicPackages(t); !slices.Equal(listed, want) {
		t.Errorf("the README lists the packages %q; the module's public packages are %q", listed, want)
	}
}
