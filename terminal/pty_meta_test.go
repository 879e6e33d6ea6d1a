package terminal

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

func TestPTYOf(t *testing.T) {
	def := &Size{Cols: 100, Rows: 30}
	for _, tc := range []struct {
		meta string // "" for none
		def  *Size
		want *Size
	}{
		{"", nil, nil},
		{"", def, def},
		{`{"cols":120,"rows":40}`, nil, &Size{120, 40}},
		{`{}`, nil, &Size{}},
		{` {"rows":10}`, def, &Size{0, 10}},
		{`true`, nil, nil},
		{`true`, def, def},
		{`{"cols":-1}`, nil, nil},
		{`{"cols":70000}`, nil, nil},
		{`null`, nil, nil},
		{`false`, def, nil},
		{` false `, nil, nil},
	} {
		var meta acp.Meta
		if tc.meta != "" {
			meta = acp.Meta{MetaPTY: json.RawMessage(tc.meta)}
		}
		got := ptyOf(meta, tc.def)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("ptyOf(%s, %v) = %v, want %v", tc.meta, tc.def, got, tc.want)
		}
		if got != nil && got == tc.def {
			t.Errorf("ptyOf(%s) returned the default itself, not a copy", tc.meta)
		}
	}
}

// FuzzPTYOf: whatever an agent puts under the key, ptyOf returns a size
// or nil, and never panics.
func FuzzPTYOf(f *testing.F) {
	for _, s := range []string{`{"cols":80,"rows":24}`, `{}`, `true`, ` `, `{"cols":"x"}`, `[1,2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = ptyOf(acp.Meta{MetaPTY: raw}, nil)
	})
}

func TestStdinOf(t *testing.T) {
	for _, tc := range []struct {
		meta string // "" for none
		want bool
	}{
		{"", false},
		{`true`, true},
		{` true `, true},
		{`{}`, true},
		{`{"x":1}`, true},
		{`false`, false},
		{`null`, false},
		{`1`, false},
		{`"true"`, false},
		{`{`, false},
		{`[true]`, false},
		{` `, false},
	} {
		var meta acp.Meta
		if tc.meta != "" {
			meta = acp.Meta{MetaStdin: json.RawMessage(tc.meta)}
		}
		if got := stdinOf(meta); got != tc.want {
			t.Errorf("stdinOf(%q) = %v, want %v", tc.meta, got, tc.want)
		}
	}
}

// FuzzStdinOf: whatever an agent puts under the key, stdinOf answers
// without panicking, and only for true or a JSON object.
func FuzzStdinOf(f *testing.F) {
	for _, s := range []string{`true`, `{}`, `false`, ` `, `{"a":`, `[1]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := stdinOf(acp.Meta{MetaStdin: raw})
		trimmed := bytes.TrimSpace(raw)
		if got && !bytes.Equal(trimmed, []byte("true")) && (len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed)) {
			t.Fatalf("stdinOf(%q) = true", raw)
		}
	})
}
