package streams

import (
	"os"
	"strings"
	"testing"
)

type holder struct{ v any }

func TestSame(t *testing.T) {
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
		{"panicking ==", holder{[]int{1}}, holder{[]int{1}}, false},
		{"equal structs", holder{1}, holder{1}, true},
	} {
		if got := Same(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.want)
		}
	}
}
