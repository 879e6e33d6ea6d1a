//go:build linux

package remote_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

type benchCommand struct {
	name string
	sh   string
	line string // what the command repeats
}

// benchCommands are the outputs the stream benchmarks capture: text, as
// most terminal output is (sent as JSON strings), and zero bytes (sent as
// base64).
var benchCommands = []benchCommand{
	{"text", "yes 'ok  github.com/acpterm/acpterm/remote  0.042s  coverage: 81.3%% of statements' | head -c %d",
		"ok  github.com/acpterm/acpterm/remote  0.042s  coverage: 81.3% of statements\n"},
	{"binary", "head -c %d /dev/zero", "\x00"},
}

// produceEnv, set to NAME:SIZE in the environment of this test binary,
// makes it write SIZE bytes of the line of benchCommands[NAME] repeated
// to its stdout, 64 KiB at a time, and exit (TestMain): a producer that
// costs little, the same on every side of a capture benchmark, and the
// same bytes as catThrough feeds.
const produceEnv = "REMOTE_TEST_PRODUCE"

// producer is the shell line that runs the test binary at path as the
// producer of size bytes of the bench command name.
func producer(path, name string, size int64) string {
	return fmt.Sprintf("%s=%s:%d %s", produceEnv, name, size, path)
}

// produce does what produceEnv asks for, if it is set, and exits.
func produce() {
	v := os.Getenv(produceEnv)
	if v == "" {
		return
	}
	name, sizeStr, _ := strings.Cut(v, ":")
	size, err := strconv.ParseInt(sizeStr, 10, 64)
	i := slices.IndexFunc(benchCommands, func(c benchCommand) bool { return c.name == name })
	if err != nil || i < 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want NAME:SIZE\n", produceEnv, v)
		os.Exit(2)
	}
	chunk := benchChunk(benchCommands[i].line)
	for left := size; left > 0; {
		n, err := os.Stdout.Write(chunk[:min(int64(len(chunk)), left)])
		if err != nil {
			os.Exit(1)
		}
		left -= int64(n)
	}
	os.Exit(0)
}

// benchChunk is 64 KiB, or just under, of line repeated.
func benchChunk(line string) []byte {
	return []byte(strings.Repeat(line, (64<<10)/len(line)))
}

// catThrough is the transport's own copy of a stream that the capture
// target (at least 0.8× of it) is set against, `ssh HOST cat` or
// `podman exec -i … cat` of the same stream: cmd, a cat on the far side, is fed size bytes of
// line repeated, the bytes the benchmark's command writes, and the time
// runs from its start until every byte has come back.
func catThrough(b *testing.B, cmd *exec.Cmd, line string, size int64) time.Duration {
	b.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	chunk := benchChunk(line)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	fed := make(chan error, 1)
	go func() {
		defer in.Close()
		for left := size; left > 0; {
			n, err := in.Write(chunk[:min(int64(len(chunk)), left)])
			if err != nil {
				fed <- err
				return
			}
			left -= int64(n)
		}
		fed <- nil
	}()
	n, err := io.Copy(io.Discard, out)
	el := time.Since(start)
	if werr := <-fed; werr != nil || err != nil {
		b.Fatalf("%s: feeding: %v; reading: %v", cmd.Args[0], werr, err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%q: %v", cmd.Args, err)
	}
	if n != size {
		b.Fatalf("%s cat: %d bytes back of %d", cmd.Args[0], n, size)
	}
	return el
}

// BenchmarkStream captures a command's output through an exec server in
// this process, over a pipe: the cost of the stream itself, no transport.
//
// go test ./remote -run XXX -bench Stream -benchtime 5x -cpuprofile cpu.out
func BenchmarkStream(b *testing.B) {
	const size = 200 << 20
	for _, bc := range benchCommands {
		b.Run(bc.name, func(b *testing.B) {
			s := serve(b, nil, nil)
			sub, err := s.c.SubscribeHeld("", "")
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close()
			ctx := testCtx(b)
			b.SetBytes(size)
			cpu0 := processCPU()
			for b.Loop() {
				id := create(b, s.c, &acp.CreateTerminalRequest{Command: fmt.Sprintf(bc.sh, size)})
				var got uint64
				for {
					ev, err := sub.Next(ctx)
					if err != nil {
						b.Fatal(err)
					}
					got += uint64(len(ev.Data))
					if ev.Dropped != 0 {
						b.Fatalf("%d bytes dropped", ev.Dropped)
					}
					if ev.Kind == terminal.EventExited {
						break
					}
				}
				if got != size {
					b.Fatalf("%d bytes, want %d", got, size)
				}
				if _, err := s.c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
					b.Fatal(err)
				}
				drain(b, sub, id)
			}
			// The server's and the client's work together, the command's
			// aside: steadier than MB/s on a loaded machine.
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/size/float64(b.N), "ns/B-cpu")
		})
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
