package ask

import "testing"

func TestMatch(t *testing.T) {
	cs := []Choice{{"default", "Default"}, {"autoEdit", "Auto Edit"}, {"yolo", "YOLO"}, {"Plan", "plan mode"}, {"plan", "Plan"}}
	for _, tc := range []struct {
		want, id string
		ok       bool
	}{
		{"yolo", "yolo", true},
		{"YOLO", "yolo", true},          // the name, or the ID ignoring case
		{"auto edit", "autoEdit", true}, // the name ignoring case
		{"autoedit", "autoEdit", true},
		{"Plan", "Plan", true}, // an exact ID wins over a case-insensitive one
		{"PLAN", "", false},    // two choices match ignoring case
		{"turbo", "", false},
		{"", "", false},
	} {
		id, ok := Match(tc.want, cs)
		if id != tc.id || ok != tc.ok {
			t.Errorf("Match(%q) = %q, %v; want %q, %v", tc.want, id, ok, tc.id, tc.ok)
		}
	}
}
