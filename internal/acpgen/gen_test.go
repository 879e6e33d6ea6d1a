package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFileUpToDate regenerates acp/types_gen.go in memory and compares it with the
// committed file, so that a schema or generator change without `go generate` fails CI.
func TestGeneratedFileUpToDate(t *testing.T) {
	schemaJSON, err := os.ReadFile(filepath.Join("..", "..", "schema", "v1", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "acp", "types_gen.go")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s is stale; run `go generate ./acp/...`.\nFirst difference at line %d:\n  file:      %q\n  generated: %q", path, i+1, g, w)
		}
	}
}

// TestGenerateDeterministic guards against map iteration order leaking into the output.
func TestGenerateDeterministic(t *testing.T) {
	schemaJSON, err := os.ReadFile(filepath.Join("..", "..", "schema", "v1", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := generate(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	for range 1 {
		again, err := generate(schemaJSON)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("two runs of the generator differ")
		}
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"SessionId":              "SessionID",
		"McpServerHttp":          "MCPServerHTTP",
		"McpServerSse":           "MCPServerSSE",
		"ElicitationUrlMode":     "ElicitationURLMode",
		"mimeType":               "MIMEType",
		"_meta":                  "Meta",
		"outputByteLimit":        "OutputByteLimit",
		"fs/read_text_file":      "FSReadTextFile",
		"$/cancel_request":       "CancelRequest",
		"terminal/wait_for_exit": "TerminalWaitForExit",
		"date-time":              "DateTime",
		"uri":                    "URI",
		"agent_message_chunk":    "AgentMessageChunk",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEveryDefHasAType checks that each $def either became a Go type or is listed as skipped.
func TestEveryDefHasAType(t *testing.T) {
	schemaJSON, err := os.ReadFile(filepath.Join("..", "..", "schema", "v1", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadSchema(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	m, err := buildModel(s)
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[string]bool{}
	for _, sk := range m.skipped {
		skipped[sk.Def] = true
	}
	for _, def := range s.defNames() {
		if m.byDef[def] == nil && !skipped[def] {
			t.Errorf("$def %s has no Go type and no skip reason", def)
		}
	}
	if len(s.Defs) != 178 {
		t.Errorf("schema has %d $defs; the pinned one has 178", len(s.Defs))
	}
}

func TestDocText(t *testing.T) {
	goType := func(def string) (string, bool) {
		if def == "TerminalId" {
			return "TerminalID", true
		}
		return "", false
	}
	var d docText
	d.markdown("Embed a `TerminalId` created with `terminal/create`; **MUST** be `null` or `\"x\"`.\n"+
		"Second line.\n\nContent appears in:\n- prompts\n- tool\n  call results\n\n"+
		"See protocol docs: [Agent Plan](https://example.com/plan)", goType)
	got := strings.Join(d.lines("\t"), "\n")
	want := strings.Join([]string{
		"\t// Embed a [TerminalID] created with \"terminal/create\"; MUST be null or \"x\". Second line.",
		"\t//",
		"\t// Content appears in:",
		"\t//",
		"\t//   - prompts",
		"\t//   - tool call results",
		"\t//",
		"\t// See protocol docs: [Agent Plan]",
		"\t//",
		"\t// [Agent Plan]: https://example.com/plan",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aa bb [doc link] cc", 8)
	want := []string{"aa bb", "[doc link]", "cc"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q, want %q", got, want)
	}
}

// TestEverythingDocumented parses the generated file and checks that every exported type,
// struct field and constant carries a doc comment, so that `go doc` answers for each of them.
func TestEverythingDocumented(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "..", "acp", "types_gen.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	missing := func(pos token.Pos, what string) { t.Errorf("%s: %s has no doc comment", fset.Position(pos), what) }
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range g.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				if g.Doc == nil && s.Doc == nil {
					missing(s.Pos(), "type "+s.Name.Name)
				}
				st, ok := s.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					if len(fld.Names) > 0 && !fld.Names[0].IsExported() {
						continue
					}
					if fld.Doc == nil && fld.Comment == nil {
						missing(fld.Pos(), s.Name.Name+" field")
					}
				}
			case *ast.ValueSpec:
				if g.Tok == token.CONST && s.Names[0].IsExported() && s.Doc == nil && s.Comment == nil {
					missing(s.Pos(), "const "+s.Names[0].Name)
				}
			}
		}
	}
}

// The pinned schema deprecates nothing; a schema that does gets "Deprecated:" paragraphs, which
// gopls and pkg.go.dev recognise.
func TestDeprecated(t *testing.T) {
	src, err := generate([]byte(`{"$defs": {"Foo": {"type": "object", "description": "A foo.", "deprecated": true,
		"properties": {"bar": {"type": "string", "description": "The bar.", "deprecated": true}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Foo is a foo.\n//\n// Deprecated: the schema marks this as deprecated.\ntype Foo struct {",
		"\t// The bar.\n\t//\n\t// Deprecated: the schema marks this as deprecated.\n\tBar *string",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
