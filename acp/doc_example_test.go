package acp_test

import (
	"os"
	"strings"
	"testing"
)

// The package doc's program is example_doc_test.go's, line for line, so
// the doc cannot drift from code that compiles and runs.
func TestPackageDocExample(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_doc_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, docPart, ok := strings.Cut(string(doc), "// # A complete agent and client\n")
	if !ok {
		t.Fatal("doc.go has no section \"A complete agent and client\"")
	}
	var fromDoc []string
	inCode := false
	for line := range strings.SplitSeq(docPart, "\n") {
		switch {
		case strings.HasPrefix(line, "//\t"):
			inCode = true
			fromDoc = append(fromDoc, strings.TrimPrefix(line, "//\t"))
		case line == "//" && inCode:
			fromDoc = append(fromDoc, "")
		}
	}
	_, rest, ok1 := strings.Cut(string(src), "// doc example: begin\n")
	code, _, ok2 := strings.Cut(rest, "\n// doc example: end")
	if !ok1 || !ok2 {
		t.Fatal("example_doc_test.go has no doc example markers")
	}
	want := strings.Split(strings.Trim(code, "\n"), "\n")
	got := strings.Split(strings.Trim(strings.Join(fromDoc, "\n"), "\n"), "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("doc.go's program differs from example_doc_test.go's at line %d:\n doc: %q\ncode: %q", i+1, g, w)
		}
	}
}
