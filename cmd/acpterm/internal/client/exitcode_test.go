package client

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The exit-status table of the command reference (docs/cli.md) lists exactly ExitMeanings' codes, in
// order: exitcode.go is the one place the numbers are defined.
func TestDocsExitTable(t *testing.T) {
	b, err := os.ReadFile("../../../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| code | meaning |\n| --- | --- |\n")
	if !ok {
		t.Fatal("docs/cli.md has no exit-status table")
	}
	row := regexp.MustCompile(`^\| (\d+) \| .+ \|$`)
	var got []int
	for line := range strings.Lines(table) {
		m := row.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m == nil {
			break
		}
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	if len(got) != len(ExitMeanings) {
		t.Fatalf("docs/cli.md lists exit statuses %v; ExitMeanings has %d", got, len(ExitMeanings))
	}
	for i, m := range ExitMeanings {
		if got[i] != m.Code {
			t.Errorf("docs/cli.md row %d is %d, ExitMeanings has %d", i, got[i], m.Code)
		}
	}
}

func TestExitTableWraps(t *testing.T) {
	for line := range strings.Lines(ExitTable() + ExitSummary()) {
		if len(strings.TrimRight(line, "\n")) > 76 {
			t.Errorf("line over 76 columns: %q", line)
		}
	}
	for _, m := range ExitMeanings {
		if !strings.Contains(ExitTable(), "  "+strconv.Itoa(m.Code)+" ") {
			t.Errorf("ExitTable lacks %d", m.Code)
		}
	}
}
