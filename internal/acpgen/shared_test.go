package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestSameShape(t *testing.T) {
	v1 := []byte(`{"$defs": {
		"Id": {"type": "string", "description": "An id."},
		"Same": {"type": "object", "description": "old words", "properties": {"id": {"$ref": "#/$defs/Id"}}},
		"Changed": {"type": "object", "properties": {"a": {"type": "string"}}},
		"UsesChanged": {"type": "object", "properties": {"c": {"$ref": "#/$defs/Changed"}}},
		"Titled": {"type": "object", "properties": {"title": {"type": "string"}}},
		"OnlyV1": {"type": "string"}
	}}`)
	v2 := []byte(`{"$defs": {
		"Id": {"type": "string", "description": "An id, in other words."},
		"Same": {"type": "object", "description": "new words", "title": "x", "properties": {"id": {"$ref": "#/$defs/Id", "description": "the id"}}},
		"Changed": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
		"UsesChanged": {"type": "object", "properties": {"c": {"$ref": "#/$defs/Changed"}}},
		"Titled": {"type": "object", "properties": {}},
		"OnlyV2": {"type": "string"}
	}}`)
	same, err := sameShape(v2, v1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for d := range same {
		got = append(got, d)
	}
	slices.Sort(got)
	// Descriptions and titles do not count; a property named "title" does; a $def is shared
	// only if what it refers to is.
	if want := []string{"Id", "Same"}; !reflect.DeepEqual(got, want) {
		t.Errorf("shared %v, want %v", got, want)
	}
}

// The v2 file declares no type twice: every name it declares is new to types_gen.go.
func TestV2DeclaresNothingOfV1(t *testing.T) {
	v1 := readRepoFile(t, "acp/types_gen.go")
	v2 := readRepoFile(t, "acp/types_v2_gen.go")
	for _, line := range strings.Split(v2, "\n") {
		if name, ok := strings.CutPrefix(line, "type "); ok {
			name, _, _ = strings.Cut(name, " ")
			if strings.Contains(v1, "\ntype "+name+" ") {
				t.Errorf("%s is declared in both files", name)
			}
		}
	}
}

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
