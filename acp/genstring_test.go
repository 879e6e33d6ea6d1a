package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// genString must decode every valid JSON string exactly as encoding/json does, and decline
// everything else.
func FuzzGenString(f *testing.F) {
	for _, s := range []string{
		`""`, `"abc"`, `"a\nb\tc\"d\\e\/f\bg\fh\ri"`, `"\u00e9\u20ac\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800x"`,
		`"\ud800\u0041"`, `"\ud800\udbff\udc00"`, "\"\xff\xfe\"", "\"é€😀\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"",
		`"\u0000\u001f"`, `"\x"`, `"\u12"`, "\"a\tb\"", `"a"b"`, `"abc`, `abc"`, `1`, `null`, `"\"`,
		`"` + strings.Repeat(`=== RUN   TestX\n--- PASS: TestX (0.00s)\n`, 20) + `"`,
		`"` + strings.Repeat("abcdefgh", 9) + `\u0041` + strings.Repeat("é", 9) + `"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := genString(b)
		var want string
		err := json.Unmarshal(b, &want)
		if valid := err == nil && len(b) > 0 && b[0] == '"' && b[len(b)-1] == '"'; ok != valid {
			t.Fatalf("%q: genString ok %v, encoding/json: %v", b, ok, err)
		}
		if ok && got != want {
			t.Fatalf("%q: genString %q, encoding/json %q", b, got, want)
		}
		if !ok {
			return
		}
		// The same through genInto, for a string, a pointer to one and a string type.
		var v struct {
			S  string
			P  *string
			ID SessionID
		}
		if err := errors.Join(genInto(b, &v.S), genInto(b, &v.P), genInto(b, &v.ID)); err != nil {
			t.Fatalf("%q: genInto: %v", b, err)
		}
		if v.S != want || v.P == nil || *v.P != want || string(v.ID) != want {
			t.Fatalf("%q: genInto gave %q, %v, %q; encoding/json %q", b, v.S, v.P, v.ID, want)
		}
	})
}
