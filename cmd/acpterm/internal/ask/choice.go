package ask

import "strings"

// A Choice is a value the user may name: its ID and its human name.
type Choice struct{ ID, Name string }

// Match finds what the user asked for among the valid choices: the exact
// ID, else the one choice whose ID or name equals it ignoring case
// (people type "Big Pickle" or "YOLO"). ok is false when nothing, or more
// than one choice, matches.
func Match(want string, choices []Choice) (id string, ok bool) {
	for _, c := range choices {
		if c.ID == want {
			return c.ID, true
		}
	}
	found := -1
	for i, c := range choices {
		if strings.EqualFold(c.ID, want) || (c.Name != "" && strings.EqualFold(c.Name, want)) {
			if found >= 0 && choices[found].ID != c.ID {
				return "", false
			}
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return choices[found].ID, true
}
