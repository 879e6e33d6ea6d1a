package main

import (
	"bytes"
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
