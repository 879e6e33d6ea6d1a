package acp_test

import (
	"bytes"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// Golden files: testdata/golden/<Type>[.<case>].json holds the params or result of a method in
// acp.Methods(), of the Go type <Type>. The test decodes it, encodes it again, and compares the two
// as JSON values. When the encoding is meant to differ from the input (null members dropped,
// lenient decoding, defaults), <Type>[.<case>].want.json holds the expected encoding.
// Every request, response and notification type needs at least one golden file.

// The same holds for v2 in testdata/golden_v2, with the types of acp.V2Methods(); a type shared
// by both versions (CloseSessionRequest) has a file in each.

// goldenTypes maps the Go type names of a method table to constructors.
func goldenTypes(methods iter.Seq[acp.MethodInfo]) map[string]func() any {
	types := map[string]func() any{}
	for m := range methods {
		for _, newV := range []func() any{m.Request, m.Response} {
			if newV != nil {
				types[reflect.TypeOf(newV()).Elem().Name()] = newV
			}
		}
	}
	return types
}

func goldenFiles(t testing.TB, dir string) []string {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	return files
}

func TestGoldenRoundTrip(t *testing.T) { goldenRoundTrip(t, "golden", acp.Methods()) }

func TestGoldenRoundTripV2(t *testing.T) { goldenRoundTrip(t, "golden_v2", acp.V2Methods()) }

func goldenRoundTrip(t *testing.T, dir string, methods iter.Seq[acp.MethodInfo]) {
	types := goldenTypes(methods)
	covered := map[string]bool{}
	for _, file := range goldenFiles(t, dir) {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if base, ok := strings.CutSuffix(name, ".want"); ok {
			if _, err := os.Stat(filepath.Join("testdata", dir, base+".json")); err != nil {
				t.Errorf("%s has no input file %s.json", file, base)
			}
			continue
		}
		typ, _, _ := strings.Cut(name, ".")
		newV := types[typ]
		if newV == nil {
			t.Errorf("%s: %s is no request, response or notification type", file, typ)
			continue
		}
		covered[typ] = true
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := in
			if w, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".want.json"); err == nil {
				want = w
			}
			v := newV()
			if err := json.Unmarshal(in, v); err != nil {
				t.Fatalf("decoding: %v", err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("encoding: %v", err)
			}
			if diff := goldenDiff(want, got); diff != "" {
				t.Errorf("re-encoded %s differs (-want +got):\n%s", typ, diff)
			}
			// What we write reads back as the same value.
			v2 := newV()
			if err := json.Unmarshal(got, v2); err != nil {
				t.Fatalf("decoding our own encoding %s: %v", got, err)
			}
			if !reflect.DeepEqual(v, v2) {
				t.Errorf("decoding %s gives %#v, want %#v", got, v2, v)
			}
		})
	}
	for typ := range types {
		if !covered[typ] {
			t.Errorf("no golden file for %s", typ)
		}
	}
}

// goldenDiff compares two JSON texts as values and returns a line diff of their indented forms,
// or "" if they are equal.
func goldenDiff(want, got []byte) string {
	w, errW := goldenCanon(want)
	g, errG := goldenCanon(got)
	if errW != nil || errG != nil {
		return "invalid JSON: want: " + goldenErrString(errW) + ", got: " + goldenErrString(errG)
	}
	if w == g {
		return ""
	}
	return goldenLineDiff(strings.Split(w, "\n"), strings.Split(g, "\n"))
}

func goldenErrString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// goldenCanon formats a JSON text with sorted keys and exact numbers, one member per line.
func goldenCanon(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	out, err := json.MarshalIndent(v, "", "  ")
	return string(out), err
}

// goldenLineDiff is a longest-common-subsequence diff: "-" lines only in a, "+" lines only in b.
func goldenLineDiff(a, b []string) string {
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("- " + a[i] + "\n")
			i++
		default:
			sb.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return sb.String()
}
