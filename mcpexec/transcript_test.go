//go:build linux

package mcpexec_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/mcpexec"
)

var update = flag.Bool("update", false, "rewrite testdata/transcript.txt from what the server answers")

// TestTranscript replays testdata/transcript.txt: lines "> " are sent to
// the server, one at a time, and the lines "< " after each are what it
// must answer (compared as JSON, with the chunk ID and the wall time
// masked). A change of the tools' schemas or of the answers' format shows
// up here as a diff; -update rewrites the file.
func TestTranscript(t *testing.T) {
	const file = "testdata/transcript.txt"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpexec.NewServer(&mcpexec.Options{Cwd: t.TempDir(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(context.Background(), &pipeRW{inR, outW, func() { inR.Close(); outW.Close() }})
	}()
	answers := bufio.NewScanner(outR)
	answers.Buffer(nil, 1<<20)
	var out bytes.Buffer
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		sent, ok := strings.CutPrefix(line, "> ")
		if !ok {
			if !strings.HasPrefix(line, "< ") {
				out.WriteString(line + "\n") // comments
			}
			continue
		}
		out.WriteString(line + "\n")
		if _, err := io.WriteString(inW, sent+"\n"); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "< ") {
			i++
			want = append(want, strings.TrimPrefix(lines[i], "< "))
		}
		n := len(want)
		if *update && !strings.Contains(sent, `"id"`) {
			n = 0 // a notification: no answer
		} else if *update {
			n = 1
		}
		for j := range n {
			if !answers.Scan() {
				t.Fatalf("after %s: no answer: %v", sent, answers.Err())
			}
			got := mask(answers.Text())
			out.WriteString("< " + got + "\n")
			if !*update && !sameJSON(got, want[j]) {
				t.Errorf("after %s:\n got %s\nwant %s", sent, got, want[j])
			}
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if *update {
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	chunkRE = regexp.MustCompile(`Chunk ID: [0-9a-f]+`)
	wallRE  = regexp.MustCompile(`Wall time: [0-9.]+ seconds`)
)

func mask(s string) string {
	s = chunkRE.ReplaceAllString(s, "Chunk ID: XXXXXX")
	return wallRE.ReplaceAllString(s, "Wall time: T seconds")
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
