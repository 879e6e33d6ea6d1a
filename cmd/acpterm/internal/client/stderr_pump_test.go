package client

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStderrCatchUp: once the agent has written its lines, catchUp returns
// only after the pump has handled every one of them, so that the end of
// a turn counts all that the agent wrote before its answer; and it
// returns at once when the pump is waiting on an empty pipe, or the pipe
// has ended.
func TestStderrCatchUp(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	d := &driver{cfg: Config{AgentStderr: AgentStderrFile, AgentStderrTo: &got}}
	d.errPump.start(pr)
	d.wg.Add(1)
	go d.pumpStderr(pr)
	for round := 1; round <= 3; round++ {
		var want strings.Builder
		for i := range 50 {
			fmt.Fprintf(&want, "round %d line %d\n", round, i)
		}
		if _, err := pw.WriteString(want.String()); err != nil {
			t.Fatal(err)
		}
		d.errPump.catchUp(10 * time.Second)
		d.errPump.mu.Lock() // the pump writes got before it waits again
		if got.String() != want.String() {
			t.Errorf("round %d: after catchUp the pump had handled %d of %d bytes", round, got.Len(), want.Len())
		}
		got.Reset()
		d.errPump.mu.Unlock()
	}
	start := time.Now()
	d.errPump.catchUp(10 * time.Second)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("catchUp on an empty pipe took %v", el)
	}
	pw.Close()
	d.wg.Wait()
	d.errPump.catchUp(10 * time.Second) // ended: returns at once
}
