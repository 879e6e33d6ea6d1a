package ask

import "testing"

// What the user reads when an answer does not fit the field: one message
// per kind of field and per rule broken.
func TestParseFieldProblems(t *testing.T) {
	s := schemaOf(t, `{
		"s": {"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-z]+$"},
		"long": {"type":"string","minLength":3},
		"e": {"type":"string","enum":["r","g"]},
		"n": {"type":"number","minimum":0.5},
		"i": {"type":"integer","minimum":-1,"maximum":3},
		"b": {"type":"boolean"},
		"m": {"type":"array","items":{"type":"string","enum":["x","y","z"]},"minItems":1,"maxItems":2},
		"o": {"type":"object"}}`)
	for _, tc := range []struct{ field, in, want string }{
		{"s", "a", "the length must be between 2 and 4"},
		{"s", "AB", "the answer must match ^[a-z]+$"},
		{"long", "ab", "the length must be at least 3"},
		{"e", "3", "please answer 1-2 or one of the values"},
		{"n", "0.1", "the number must be at least 0.5"},
		{"n", "Inf", "please answer a number"},
		{"i", "4", "the number must be between -1 and 3"},
		{"i", "1.5", "please answer a whole number"},
		{"b", "maybe", "please answer yes or no"},
		{"m", "x,y,z", "the number of choices must be between 1 and 2"},
		{"m", " , ", "the number of choices must be between 1 and 2"},
		{"m", "w", "please answer numbers 1-3 or values, separated by commas"},
		{"o", "{}", "acpterm cannot answer a field of this type"},
	} {
		v, problem := parseField(s.Properties[tc.field], tc.in)
		if problem != tc.want || v != nil {
			t.Errorf("%s %q: %v, %q; want nil, %q", tc.field, tc.in, v, problem, tc.want)
		}
	}
}
