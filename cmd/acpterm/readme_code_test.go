package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Go code is two fragments, an agent and a client, with the
// methods and variables every program has left out. TestREADMEGoCode
// completes each into a program (readmeScaffolds) and builds it against
// the module as it is, through an overlay: no file is written into the
// tree, and nothing is fetched.

// readmeScaffold completes a fragment that contains marker: imports and
// what the README leaves out, around its declarations and, in main, its
// statements.
type readmeScaffold struct {
	marker string
	decls  string
	// main holds the statements; %s is where the fragment's go.
	main string
}

var readmeScaffolds = []readmeScaffold{
	{
		marker: "acp.ServeAgent(",
		decls: `func (a *agent) Initialize(ctx context.Context, _ *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersion1}, nil
}

func (a *agent) NewSession(ctx context.Context, _ *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s1"}, nil
}
`,
		main: "ctx := context.Background()\n%s\n_ = err",
	},
	{
		marker: "acp.StartAgent(",
		decls: `func (client) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error { return nil }

func (client) RequestPermission(ctx context.Context, _ *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}
`,
		main: "sandbox.Init()\nctx, dir := context.Background(), \"/\"\n%s\n_, _ = resp, err",
	},
}

// readmePrelude is every program's package clause and imports, each import
// used once so that a fragment may leave any of them out.
const readmePrelude = `package main

import (
	"context"
	"os"
	"os/exec"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
	"github.com/acpterm/acpterm/workspace"
)

var (
	_ = context.Background
	_ = os.Stdin
	_ = exec.Command
	_ = time.Second
	_ = acp.ServeAgent
	_ = display.RunCommand
	_ = sandbox.Init
	_ = terminal.NewManager
	_ = workspace.NewWorkspace
)
`

// goBlocks are the ```go blocks of a Markdown text.
func goBlocks(doc string) []string {
	var blocks []string
	for {
		_, rest, ok := strings.Cut(doc, "```go\n")
		if !ok {
			return blocks
		}
		block, after, _ := strings.Cut(rest, "```")
		blocks = append(blocks, block)
		doc = after
	}
}

// splitFragment sorts a fragment's lines into top-level declarations
// (from a line that starts with "type " or "func " to the next line that
// is only "}", or that line alone when it ends with "}") and statements
// (everything else, continuation lines included).
func splitFragment(block string) (decls, stmts string) {
	var d, s strings.Builder
	inDecl := false
	for line := range strings.Lines(block) {
		switch {
		case inDecl:
			d.WriteString(line)
			inDecl = strings.TrimRight(line, "\n") != "}"
		case strings.HasPrefix(line, "type ") || strings.HasPrefix(line, "func "):
			d.WriteString(line)
			inDecl = !strings.HasSuffix(strings.TrimRight(line, "\n"), "}") && !strings.Contains(line, "} //")
		default:
			s.WriteString(line)
		}
	}
	return d.String(), s.String()
}

// TestREADMEGoCode: the README's Go fragments build against the module,
// completed only with what they say they leave out.
func TestREADMEGoCode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(readme))
	if len(blocks) == 0 {
		t.Fatal("the README has no Go code")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	for i, block := range blocks {
		var sc *readmeScaffold
		for j := range readmeScaffolds {
			if strings.Contains(block, readmeScaffolds[j].marker) {
				sc = &readmeScaffolds[j]
			}
		}
		if sc == nil {
			t.Errorf("README Go block %d has no scaffold in this test:\n%s", i+1, block)
			continue
		}
		decls, stmts := splitFragment(block)
		src := readmePrelude + "\n" + decls + "\n" + sc.decls + "\nfunc main() {\n" + fmt.Sprintf(sc.main, stmts) + "\n}\n"
		file := filepath.Join(tmp, fmt.Sprintf("readme%d.go", i+1))
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "cmd", "acpterm", "testdata", fmt.Sprintf("readme%d", i+1))
		overlay[filepath.Join(dir, "main.go")] = file
		pkgs = append(pkgs, dir)
	}
	b, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		cmd := exec.Command("go", "build", "-overlay="+overlayFile, "-o", filepath.Join(tmp, "out"), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			src, _ := os.ReadFile(overlay[filepath.Join(pkg, "main.go")])
			t.Errorf("the README's Go code does not build (%v):\n%s\nas completed:\n%s", err, out, src)
		}
	}
}
