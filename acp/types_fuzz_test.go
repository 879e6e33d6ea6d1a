package acp_test

import (
	"bytes"
	"encoding/json"
	"iter"
	"os"
	"reflect"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// FuzzDecodeMessages decodes arbitrary bytes as every params and result type of the method table.
// Decoding must not panic, and whatever decodes must encode, decode again to an equal value, and
// encode again to the same bytes.
func FuzzDecodeMessages(f *testing.F) {
	fuzzDecode(f, "golden", acp.Methods())
}

// FuzzDecodeMessagesV2 is FuzzDecodeMessages for the v2 types.
func FuzzDecodeMessagesV2(f *testing.F) {
	fuzzDecode(f, "golden_v2", acp.V2Methods())
}

func fuzzDecode(f *testing.F, dir string, methods iter.Seq[acp.MethodInfo]) {
	for _, file := range goldenFiles(f, dir) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	var types []func() any
	for m := range methods {
		types = append(types, m.Request)
		if m.Response != nil {
			types = append(types, m.Response)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, newV := range types {
			v := newV()
			if json.Unmarshal(data, v) != nil {
				continue
			}
			enc, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%T decoded from %q does not encode: %v", v, data, err)
			}
			v2 := newV()
			if err := json.Unmarshal(enc, v2); err != nil {
				t.Fatalf("%T: our encoding %s does not decode: %v", v, enc, err)
			}
			if !reflect.DeepEqual(v, v2) {
				t.Fatalf("%T: round trip through %s changed\n%#v\ninto\n%#v", v, enc, v, v2)
			}
			enc2, err := json.Marshal(v2)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("%T: encoding is not stable: %s then %s (%v)", v, enc, enc2, err)
			}
		}
	})
}
