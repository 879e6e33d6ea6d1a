package interop

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Wire transcripts of one v1 and one v2 exchange (the SDK's client against
// the Go agent) are kept in acp/testdata/transcripts, where package acp's
// tests check every message against its version's types and rules. Here a
// live run is compared with the kept one: the same messages, by direction
// and kind, so the next SDK release that changes its dialect shows up as a
// difference. ACPTERM_UPDATE_TRANSCRIPTS=1 writes the live run instead.

const updateTranscriptsEnv = "ACPTERM_UPDATE_TRANSCRIPTS"

// keepTranscript compares (or writes) the transcript named name.
func keepTranscript(t *testing.T, name string, tr transcript, workspace string) {
	t.Helper()
	var buf bytes.Buffer
	for _, w := range tr.wire {
		dir := "to_agent" // the SDK's client wrote it
		if w.str("dir") == "in" {
			dir = "to_client"
		}
		msg, err := json.Marshal(w.at("msg"))
		if err != nil {
			t.Fatal(err)
		}
		// Paths under the test's temporary workspace would differ run by run.
		ws, _ := json.Marshal(workspace)
		msg = bytes.ReplaceAll(msg, ws[1:len(ws)-1], []byte("/workspace"))
		line, _ := json.Marshal(map[string]json.RawMessage{"dir": json.RawMessage(`"` + dir + `"`), "msg": msg})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := filepath.Join(interopDir, "..", "acp", "testdata", "transcripts", name+".jsonl")
	if os.Getenv(updateTranscriptsEnv) == "1" {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s=1 writes it)", err, updateTranscriptsEnv)
	}
	got, want := transcriptKinds(t, buf.Bytes()), transcriptKinds(t, kept)
	if !slices.Equal(got, want) {
		t.Errorf("the exchange differs from %s by direction and kind (%s=1 takes the new one):\n  only now:  %s\n  only kept: %s",
			path, updateTranscriptsEnv, strings.Join(minus(got, want), ", "), strings.Join(minus(want, got), ", "))
	}
}

// minus is a without the elements of b, counted: both sorted.
func minus(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a); {
		switch {
		case j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && b[j] < a[i]:
			j++
		default:
			out = append(out, a[i])
			i++
		}
	}
	return out
}

// transcriptKinds lists each message of a transcript as direction and kind
// (a method, "result:"+method, "error:"+method, or a session update's kind),
// sorted: the order of concurrent messages varies run by run.
func transcriptKinds(t *testing.T, b []byte) []string {
	t.Helper()
	methods := map[string]string{} // dir + id -> method of the request
	var out []string
	for _, o := range jsonLines(t, b) {
		dir, msg := o.str("dir"), o.sub("msg")
		id, _ := json.Marshal(msg.at("id"))
		kind := msg.str("method")
		switch {
		case kind != "" && msg.at("id") != nil:
			methods[dir+string(id)] = kind
		case kind == "":
			other := "to_agent"
			if dir == other {
				other = "to_client"
			}
			kind = "result:" + methods[other+string(id)]
			if msg.at("error") != nil {
				kind = "error:" + methods[other+string(id)]
			}
		}
		if u := msg.str("params.update.sessionUpdate"); u != "" {
			kind += ":" + u
			if s := msg.str("params.update.state"); s != "" {
				kind += ":" + s
			}
		}
		out = append(out, dir+" "+kind)
	}
	slices.Sort(out)
	return out
}
