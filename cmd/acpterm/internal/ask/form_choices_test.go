package ask

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// TestFormFieldManyChoices: a form field with 100,000 choices prints a
// bounded question (it wrote 3.4 MB): the first few, numbered, and a
// count of the rest, each of which can still be picked.
func TestFormFieldManyChoices(t *testing.T) {
	const n = 100_000
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("choice-%06d-%s", i, strings.Repeat("x", 20))
	}
	enum, err := json.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	s := schemaOf(t, `{"pick":{"type":"string","enum":`+string(enum)+`}}`)
	fields := Fields(&acp.ElicitationFormMode{RequestedSchema: s})
	if len(fields) != 1 {
		t.Fatalf("%d fields", len(fields))
	}
	head := fields[0].head()
	if len(head) > 4<<10 || strings.Count(head, "\n") > maxShownChoices+2 {
		t.Fatalf("the question of a field with %d choices is %d bytes, %d lines", n, len(head), strings.Count(head, "\n")+1)
	}
	for _, want := range []string{"  1) " + vals[0], fmt.Sprintf("  %d) %s", maxShownChoices, vals[maxShownChoices-1]), "… and 99,980 more"} {
		if !strings.Contains(head, want) {
			t.Errorf("the question lacks %q:\n%s", want, head)
		}
	}
	if strings.Contains(head, vals[maxShownChoices]) {
		t.Errorf("choice %d is listed:\n%s", maxShownChoices+1, head)
	}
	for _, in := range []string{"100000", vals[n-1]} {
		v, problem := parseField(fields[0].schema, in)
		if b, _ := json.Marshal(v); problem != "" || string(b) != `"`+vals[n-1]+`"` {
			t.Errorf("answer %q: %s %s", in, b, problem)
		}
	}
}
