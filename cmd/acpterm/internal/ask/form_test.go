package ask

import (
	"encoding/json"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

func schemaOf(t testing.TB, props string) acp.ElicitationSchema {
	t.Helper()
	var s acp.ElicitationSchema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":`+props+`}`), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseField(t *testing.T) {
	s := schemaOf(t, `{
		"s": {"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-z]+$"},
		"e": {"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},
		"n": {"type":"number","minimum":0.5},
		"i": {"type":"integer","maximum":3},
		"b": {"type":"boolean"},
		"m": {"type":"array","items":{"type":"string","enum":["x","y","z"]},"maxItems":2}}`)
	for _, tc := range []struct {
		field, in, want string // want: the JSON value, or "!" for a problem
	}{
		{"s", "ab", `"ab"`}, {"s", "a", "!"}, {"s", "abcde", "!"}, {"s", "AB", "!"},
		{"e", "2", `"g"`}, {"e", "red", `"r"`}, {"e", "3", "!"},
		{"n", "0.75", "0.75"}, {"n", "0.1", "!"}, {"n", "NaN", "!"},
		{"i", "3", "3"}, {"i", "4", "!"}, {"i", "1.5", "!"},
		{"b", "Yes", "true"}, {"b", "n", "false"}, {"b", "maybe", "!"},
		{"m", "1, z, 1", `["x","z"]`}, {"m", "x,y,z", "!"}, {"m", "w", "!"},
	} {
		v, problem := parseField(s.Properties[tc.field], tc.in)
		got := "!"
		if problem == "" {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		}
		if got != tc.want {
			t.Errorf("%s %q: %s (%s), want %s", tc.field, tc.in, got, problem, tc.want)
		}
	}
}

func TestFormFields(t *testing.T) {
	s := schemaOf(t, `{"b":{"type":"boolean"},"a":{"type":"string"},"z":{"type":"integer"}}`)
	s.Required = []string{"z", "missing"}
	fields := Fields(&acp.ElicitationFormMode{RequestedSchema: s})
	var names string
	for _, f := range fields {
		names += f.name
		if f.required {
			names += "*"
		}
		names += " "
	}
	if names != "z* a b " {
		t.Fatalf("fields %q, want the required first, then by name", names)
	}
	// A required field of a type acpterm does not know: the form is not
	// asked (declined).
	u := schemaOf(t, `{"x":{"type":"color"}}`)
	u.Required = []string{"x"}
	if Fields(&acp.ElicitationFormMode{RequestedSchema: u}) != nil {
		t.Fatal("a form with an unknown required field was accepted")
	}
}

// FuzzParseField: whatever schema the agent sends and whatever the user
// types, parsing an answer never panics, and an accepted one encodes.
func FuzzParseField(f *testing.F) {
	f.Add(`{"type":"string","pattern":"(a+)+$","minLength":1}`, "aaaa")
	f.Add(`{"type":"array","items":{"type":"string","enum":["x"]},"minItems":1}`, "1,1")
	f.Add(`{"type":"integer","minimum":-5}`, "-9223372036854775808")
	f.Fuzz(func(t *testing.T, schema, line string) {
		var s acp.ElicitationSchema
		if json.Unmarshal([]byte(`{"properties":{"f":`+schema+`}}`), &s) != nil || s.Properties["f"] == nil {
			return
		}
		v, problem := parseField(s.Properties["f"], line)
		if problem == "" {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("accepted %q as %#v, which does not encode: %v", line, v, err)
			}
		}
	})
}
