package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var scanSeeds = []string{
	`{}`, ` { } `, `[]`, `[1,[2,{"a":[]}],"x"]`, `{"a":{"b":{"c":null}}}`, `""`, `"\u00e9\ud800\"\\\/\b\f\n\r\t"`,
	`0`, `-0`, `-0.5e+10`, `1E-2`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `true`, `falsey`, `nul`, `null`,
	`"abc`, `"a\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", "\"\x1f\"", "\"\xff\xfe\"", `{"a"}`, `{"a":}`, `{"a":1,}`,
	`[1,]`, `[1 2]`, `{"a":1 "b":2}`, `{1:2}`, `[}`, `{]`, `{"a":1}}`, `{"a":1}x`, ` [ 1 , 2 ] `,
	strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting),
	strings.Repeat("[", maxNesting+1) + strings.Repeat("]", maxNesting+1),
	strings.Repeat("[", 100) + `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}" + strings.Repeat("]", 100),
	`"` + strings.Repeat("abcdefg\\n", 20) + `"`, `"` + strings.Repeat("x", 17) + `\"` + strings.Repeat("y", 9) + `"`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"b"}}`,
	`{"jsonrpc":"2.0","ID":1,"method":"m"}`, `{"jsonrpc":"2.0","id":1,"Method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}`, `{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"m"}`, `{"jsonrpc":"2.0","id":1,"method":"\u006d"}`,
	`{"jsonrpc":"2.0","\u0069d":1,"method":"m"}`, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
	`{"jsonrpc":"2.0","ſ":1,"method":"m"}`, `{"jsonrpc":"2.0","other":[1,{"x":"}"}],"result":null,"id":"a"}`,
	`{"jsonrpc":null,"id":1,"result":{}}`, `{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}`,
}

// skipValue accepts exactly what json.Valid accepts.
func FuzzSkipValue(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end := skipValue(b, skipSpace(b, 0))
		got := end >= 0 && skipSpace(b, end) == len(b)
		if want := json.Valid(b); got != want {
			t.Fatalf("%q: skipValue says valid %v (end %d), json.Valid %v", b, got, end, want)
		}
	})
}

// scanEnvelope either declines or decodes exactly as json.Unmarshal does.
func FuzzScanEnvelope(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(strings.TrimRight(s, "\r\n")))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got wireIn
		if !scanEnvelope(line, &got) {
			return
		}
		var want wireIn
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("%q: scanned, but json.Unmarshal fails: %v", line, err)
		}
		if got.JSONRPC != want.JSONRPC || got.Method != want.Method || !bytes.Equal(got.ID, want.ID) ||
			!bytes.Equal(got.Params, want.Params) || !bytes.Equal(got.Result, want.Result) || !bytes.Equal(got.Error, want.Error) {
			t.Fatalf("%q:\nscanned   %+v\nUnmarshal %+v", line, got, want)
		}
	})
}

func TestScanEnvelopeDeclines(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","ID":1,"method":"m"}`,               // another spelling of a member name
		`{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}`,  // a member twice
		`{"jsonrpc":"2.0","id":1,"method":5}`,                 // a method that is not a string
		`{"jsonrpc":"2.0","id":1,"method":"\u006d"}`,          // escapes
		`{"jsonrpc":"2.0","\u0069d":1,"method":"m"}`,          // escapes in a name
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",  // invalid UTF-8
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[1,]}`, // invalid JSON
		`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,             // not an object
	} {
		var w wireIn
		if scanEnvelope([]byte(line), &w) {
			t.Errorf("%s: scanned, want it left to json.Unmarshal", line)
		}
	}
	var w wireIn
	line := ` {"id" : "a", "other":[{"x":"}"}], "jsonrpc":"2.0", "result" : {"output":"a\nb"} } `
	if !scanEnvelope([]byte(line), &w) {
		t.Fatalf("%s: declined", line)
	}
	if w.JSONRPC != "2.0" || string(w.ID) != `"a"` || string(w.Result) != `{"output":"a\nb"}` || w.Method != "" || w.Params != nil || w.Error != nil {
		t.Errorf("%s: scanned %+v", line, w)
	}
}
