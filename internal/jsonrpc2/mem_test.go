package jsonrpc2

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

const memChildEnv = "JSONRPC2_TEST_MEM_CHILD"

// An incoming message costs at most about three times its size: the line, gathered in blocks
// and joined once (the blocks are garbage by then, but the GC may not have run), and the
// handler's decoded value. Before the blocks, this measured 4.3x. The measurement runs in a subprocess, whose
// peak RSS (VmHWM) covers nothing but this one message.
func TestLargeMessageMemory(t *testing.T) {
	const size = 60 << 20
	if os.Getenv(memChildEnv) != "" {
		memChild(t, size)
		return
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc/self/status")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies memory use")
	}
	if testing.Short() {
		t.Skip("reads a 60 MiB message")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLargeMessageMemory$", "-test.v")
	cmd.Env = append(os.Environ(), memChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	_, after, ok := bytes.Cut(out, []byte("GROWTH "))
	if !ok {
		t.Fatalf("child printed no measurement:\n%s", out)
	}
	growth, err := strconv.ParseInt(string(bytes.Fields(after)[0]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS grew by %d MiB for a %d MiB message (%.2fx)", growth>>20, size>>20, float64(growth)/size)
	// The slack is the runtime's own growth (GC metadata, the read buffer, a few goroutines).
	if growth > 3*size+8<<20 {
		t.Errorf("peak RSS grew by %d MiB for a %d MiB message: more than 3x", growth>>20, size>>20)
	}
}

// memChild reads one notification of about size bytes through a Conn, decodes its params as
// a typed handler would (into a string), and prints how much its peak RSS grew.
func memChild(t *testing.T, size int) {
	base := vmHWM(t)
	r, w := io.Pipe()
	got := make(chan int, 1)
	c := NewConn(r, io.Discard, HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		var p struct {
			Text string `json:"text"`
		}
		err := json.Unmarshal(req.Params, &p)
		got <- len(p.Text)
		return nil, err
	}), &Options{Logf: t.Logf})
	go func() {
		// The message is generated as it is written, so the writer holds 64 KiB of it.
		bw := bufio.NewWriterSize(w, 64<<10)
		bw.WriteString(`{"jsonrpc":"2.0","method":"big","params":{"text":"`)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for n := 0; n < size; n += len(chunk) {
			bw.Write(chunk)
		}
		bw.WriteString("\"}}\n")
		bw.Flush()
		w.Close()
	}()
	if n := <-got; n != size {
		t.Errorf("decoded %d bytes, want %d", n, size)
	}
	c.Wait()
	c.Close()
	fmt.Printf("GROWTH %d\n", vmHWM(t)-base)
}

// vmHWM returns the process's peak resident set size in bytes.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
