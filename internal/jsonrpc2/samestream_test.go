package jsonrpc2

import (
	"os"
	"strings"
	"testing"
)

type sameHolder struct{ v any }

func TestSameStream(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	sr := strings.NewReader("x")
	for _, tt := range []struct {
		name string
		a, b any
		want bool
	}{
		{"one file", r, r, true},
		{"two ends", r, w, false},
		{"other types", r, sr, false},
		{"nil", nil, nil, false},
		{"uncomparable", []int{1}, []int{1}, false},
		{"panicking ==", sameHolder{[]int{1}}, sameHolder{[]int{1}}, false},
		{"equal structs", sameHolder{1}, sameHolder{1}, true},
	} {
		if got := SameStream(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: SameStream = %v, want %v", tt.name, got, tt.want)
		}
	}
}
