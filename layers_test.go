package acpterm_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The module's layers, read from the tree (docs/architecture.md):
//
//   - the public toolkit at the root (acp, display, terminal, workspace,
//     sandbox, …);
//   - internal/, what the toolkit stands on: it imports nothing of the
//     module outside internal/, and each of its packages has a user outside
//     the CLI, so the CLI's own code does not hide there;
//   - cmd/acpterm, the application, with its own cmd/acpterm/internal/;
//     of its packages, those in cliLeaves stand below the rest of it.
//
// The check parses import clauses only (no build, no network), tests
// included, so an arrow from a test counts too.

const module = "github.com/acpterm/acpterm"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLayers(t *testing.T) {
	pkgs, err := readPackages(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("read %d packages; the walk missed the tree", len(pkgs))
	}
	for _, p := range layerViolations(pkgs) {
		t.Error(p)
	}
}

// pkgInfo is what the check needs of one package directory.
type pkgInfo struct {
	imports  []string // the module's packages imported by any file, tests included, as module-relative paths
	generate []string // module-relative directories of the programs its //go:generate lines run
}

// readPackages parses the import clauses of every Go file of the module
// below root, keyed by module-relative directory ("acp", "internal/proc/cgroup").
// Directories Go ignores (testdata, _x, .x) and nested modules are skipped.
func readPackages(root string) (map[string]*pkgInfo, error) {
	pkgs := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module (bench)
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		info := pkgs[dir]
		if info == nil {
			info = &pkgInfo{}
			pkgs[dir] = info
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if rel, ok := strings.CutPrefix(ip, module+"/"); ok && !slices.Contains(info.imports, rel) {
				info.imports = append(info.imports, rel)
			}
		}
		info.generate = append(info.generate, generated(dir, src)...)
		return nil
	})
	return pkgs, err
}

// generated returns the module-relative directories of the programs that
// the //go:generate lines of src run with "go run DIR".
func generated(dir string, src []byte) []string {
	var dirs []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		args, ok := strings.CutPrefix(sc.Text(), "//go:generate go run ")
		if !ok {
			continue
		}
		if f := strings.Fields(args); len(f) > 0 && strings.HasPrefix(f[0], ".") {
			dirs = append(dirs, path.Join(dir, f[0]))
		}
	}
	return dirs
}

// cliLeaves are the CLI's packages that the rest of it is built on: each
// (with the packages below it) imports the toolkit and internal/, and
// nothing else of the CLI, so that the renderers, say, never reach into
// the client that drives them.
var cliLeaves = []string{"cmd/acpterm/internal/render", "cmd/acpterm/internal/jobs", "cmd/acpterm/internal/exitcode"}

func isInternal(p string) bool  { return p == "internal" || strings.HasPrefix(p, "internal/") }
func isCLI(p string) bool       { return p == "cmd" || strings.HasPrefix(p, "cmd/") }
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// leafOf is the entry of cliLeaves that p is within, or "".
func leafOf(p string) string {
	for _, l := range cliLeaves {
		if within(p, l) {
			return l
		}
	}
	return ""
}

// layerViolations returns one line per broken rule.
func layerViolations(pkgs map[string]*pkgInfo) []string {
	var bad []string
	users := map[string][]string{} // package -> the packages that import or generate with it
	for _, p := range sortedKeys(pkgs) {
		for _, imp := range pkgs[p].imports {
			if imp != p {
				users[imp] = append(users[imp], p)
			}
			if isInternal(p) && !isInternal(imp) {
				bad = append(bad, fmt.Sprintf("%s imports %s: internal/ may import only internal/", p, imp))
			}
			if isCLI(imp) && !isCLI(p) {
				bad = append(bad, fmt.Sprintf("%s imports %s: only the CLI may import the CLI", p, imp))
			}
			if l := leafOf(p); l != "" && isCLI(imp) && !within(imp, l) {
				bad = append(bad, fmt.Sprintf("%s imports %s: %s stands below the rest of the CLI", p, imp, l))
			}
		}
		for _, g := range pkgs[p].generate {
			users[g] = append(users[g], p)
		}
	}
	// An internal package is needed below the CLI when a package outside
	// both internal/ and cmd/ uses it, directly or through other internal
	// packages.
	needed := map[string]bool{}
	var isNeeded func(p string, seen map[string]bool) bool
	isNeeded = func(p string, seen map[string]bool) bool {
		if v, ok := needed[p]; ok {
			return v
		}
		if seen[p] {
			return false
		}
		seen[p] = true
		for _, u := range users[p] {
			if (!isInternal(u) && !isCLI(u)) || (isInternal(u) && isNeeded(u, seen)) {
				needed[p] = true
				return true
			}
		}
		return false
	}
	for _, p := range sortedKeys(pkgs) {
		if isInternal(p) && !isNeeded(p, map[string]bool{}) {
			bad = append(bad, fmt.Sprintf("%s has no user outside the CLI (used by %s): the CLI's own packages belong in cmd/acpterm/internal", p, describe(users[p])))
		}
	}
	return bad
}

func describe(users []string) string {
	if len(users) == 0 {
		return "nobody"
	}
	return strings.Join(users, ", ")
}

func sortedKeys(m map[string]*pkgInfo) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestLayerRules: each rule catches its breach on a made-up graph.
func TestLayerRules(t *testing.T) {
	pkgs := map[string]*pkgInfo{
		"acp":                    {imports: []string{"internal/jsonrpc2"}, generate: []string{"internal/gen"}},
		"internal/jsonrpc2":      {imports: []string{"internal/text"}},
		"internal/text":          {},
		"internal/gen":           {},
		"internal/up":            {imports: []string{"acp"}},
		"internal/cliness":       {},
		"internal/orphan":        {},
		"cmd/acpterm":            {imports: []string{"internal/cliness", "internal/up"}},
		"terminal":               {imports: []string{"cmd/acpterm/internal/x"}},
		"cmd/acpterm/internal/x": {imports: []string{"cmd/acpterm/internal/render"}},
		// A leaf (cliLeaves) may use its own packages, not the rest of the CLI.
		"cmd/acpterm/internal/render":       {imports: []string{"acp", "cmd/acpterm/internal/render/rtest", "cmd/acpterm/internal/x"}},
		"cmd/acpterm/internal/render/rtest": {imports: []string{"cmd/acpterm/internal/render", "cmd/acpterm"}},
	}
	got := layerViolations(pkgs)
	want := []string{
		"internal/up imports acp: internal/ may import only internal/",
		"terminal imports cmd/acpterm/internal/x: only the CLI may import the CLI",
		"cmd/acpterm/internal/render imports cmd/acpterm/internal/x: cmd/acpterm/internal/render stands below the rest of the CLI",
		"cmd/acpterm/internal/render/rtest imports cmd/acpterm: cmd/acpterm/internal/render stands below the rest of the CLI",
		"internal/cliness has no user outside the CLI (used by cmd/acpterm): the CLI's own packages belong in cmd/acpterm/internal",
		"internal/orphan has no user outside the CLI (used by nobody): the CLI's own packages belong in cmd/acpterm/internal",
		"internal/up has no user outside the CLI (used by cmd/acpterm): the CLI's own packages belong in cmd/acpterm/internal",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
