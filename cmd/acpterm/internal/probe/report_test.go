package probe

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	rep := &Report{
		Client:          ClientInfo{Name: "zed", Version: "0.200.0"},
		ProtocolVersion: 1,
		Cases: []CaseResult{
			{ID: "exit-code-nonzero", Title: "exit code 3 is reported", Rule: "r1", Normative: true, Result: ResultPass, Observed: "exitCode 3", DurationMs: 12},
			{ID: "truncation-keeps-end", Title: "truncation keeps the end", Rule: "r2", Normative: true, Result: ResultFail, Observed: "kept the beginning\nof it", DurationMs: 30},
			{ID: "signal-name-posix", Title: "signal names", Rule: "r3", Result: ResultInfo, Observed: `not a POSIX name: "Terminated"`, DurationMs: 5},
		},
	}
	rep.Summarize()
	return rep
}

// The JSON shape is a published interface: pin its field names.
func TestReportJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(buf.Bytes(), &generic); err != nil {
		t.Fatal(err)
	}
	want := `{"cases":[{"durationMs":12,"id":"exit-code-nonzero","normative":true,"observed":"exitCode 3","result":"pass","rule":"r1","title":"exit code 3 is reported"},` +
		`{"durationMs":30,"id":"truncation-keeps-end","normative":true,"observed":"kept the beginning\nof it","result":"fail","rule":"r2","title":"truncation keeps the end"},` +
		`{"durationMs":5,"id":"signal-name-posix","normative":false,"observed":"not a POSIX name: \"Terminated\"","result":"info","rule":"r3","title":"signal names"}],` +
		`"client":{"name":"zed","version":"0.200.0"},"protocolVersion":1,"summary":{"fail":1,"info":1,"pass":1,"skip":0}}`
	got, _ := json.Marshal(generic) // map keys sorted
	if string(got) != want {
		t.Errorf("JSON shape\n got %s\nwant %s", got, want)
	}
}

func TestReportTable(t *testing.T) {
	rep := sampleReport()
	table := rep.Table()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines:\n%s", len(lines), table)
	}
	// Columns line up: every row's case id starts where the header's does.
	col := strings.Index(lines[0], "CASE")
	for i, c := range rep.Cases {
		if strings.Index(lines[i+1], c.ID) != col {
			t.Errorf("row %q: id not in column %d", lines[i+1], col)
		}
	}
	if !strings.HasPrefix(lines[2], "FAIL ") || !strings.Contains(lines[2], "kept the beginning of it") {
		t.Errorf("failure row %q", lines[2])
	}
	if h := rep.Headline(); !strings.Contains(h, "zed 0.200.0 fails 1 normative case(s): 1 pass, 1 fail, 1 info, 0 skip") {
		t.Errorf("headline %q", h)
	}
	msg := rep.message()
	if !strings.Contains(msg, "```text\nRESULT") || !strings.HasSuffix(msg, "```\n") {
		t.Errorf("message %q", msg)
	}
}

func TestHeadlines(t *testing.T) {
	for _, tt := range []struct {
		sum  Summary
		want string
	}{
		{Summary{Pass: 3, Info: 1}, "the client passes every normative case: 3 pass"},
		{Summary{Pass: 1, Skip: 2}, "passes every normative case that ran"},
		{Summary{Skip: 4}, "nothing was checked on the client"},
		{Summary{Pass: 1, Fail: 2}, "fails 2 normative case(s)"},
	} {
		rep := &Report{Summary: tt.sum}
		if h := rep.Headline(); !strings.Contains(h, tt.want) {
			t.Errorf("%+v: %q, want %q", tt.sum, h, tt.want)
		}
	}
}

func TestWriteFileReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 10000)), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := sampleReport()
	if err := rep.writeFile(path); err != nil {
		t.Fatal(err)
	}
	got := readReport(t, path)
	if got.Summary != rep.Summary || len(got.Cases) != 3 {
		t.Errorf("read back %+v", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := rep.writeFile(filepath.Join(t.TempDir(), "missing", "r.json")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234567 * time.Nanosecond: "1ms",
		1567 * time.Millisecond:   "1.6s",
		1500 * time.Nanosecond:    "2µs",
		15 * time.Second:          "15s",
	} {
		if got := dur(d).String(); got != want {
			t.Errorf("dur(%v) = %s, want %s", d, got, want)
		}
	}
}
