package remotetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/terminal"
)

// MarkerVar is the variable that WithMarker puts in a command's
// environment. Each test draws a value of its own (NewMarker), so that
// what its commands left running is found by the value alone, setsid
// descendants and orphans included, whatever else runs on the target.
const MarkerVar = "ACPTERM_TEST_MARKER"

// NewMarker returns a value for MarkerVar unique to one test.
func NewMarker() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WithMarker adds MarkerVar=marker to req's environment and returns req.
func WithMarker(req *acp.CreateTerminalRequest, marker string) *acp.CreateTerminalRequest {
	req.Env = append(req.Env, acp.EnvVariable{Name: MarkerVar, Value: marker})
	return req
}

// Ctx bounds one call of a test: a minute, which the slowest transport
// (kubectl exec to a real cluster) needs, so that a hang fails the test
// instead of the whole binary's timeout. It ends with the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Create creates a terminal in session "s" unless req names another,
// and fails the test when the server refuses it.
func Create(t testing.TB, c *remote.Client, req *acp.CreateTerminalRequest) acp.TerminalID {
	t.Helper()
	if req.SessionID == "" {
		req.SessionID = "s"
	}
	resp, err := c.CreateTerminal(Ctx(t), req)
	if err != nil {
		t.Fatalf("CreateTerminal(%q): %v", req.Command, err)
	}
	return resp.TerminalID
}

// WaitExit waits for the command of session "s"'s terminal id to exit and
// returns its status.
func WaitExit(t testing.TB, c *remote.Client, id acp.TerminalID) acp.TerminalExitStatus {
	t.Helper()
	w, err := c.WaitForTerminalExit(Ctx(t), &acp.WaitForTerminalExitRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return acp.TerminalExitStatus{ExitCode: w.ExitCode, Signal: w.Signal}
}

// Output returns the output of session "s"'s terminal id.
func Output(t testing.TB, c *remote.Client, id acp.TerminalID) *acp.TerminalOutputResponse {
	t.Helper()
	out, err := c.TerminalOutput(Ctx(t), &acp.TerminalOutputRequest{SessionID: "s", TerminalID: id})
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	return out
}

// Place is the target as the test sees its processes. The exec server's
// answers are not enough to check that a release or a disconnect killed
// a command's whole tree: a Place looks at the processes themselves.
type Place interface {
	// Marked lists the live processes there (zombies count as dead)
	// whose environment holds MarkerVar=marker, one line each ("PID",
	// or "PID ARGS").
	Marked(t testing.TB, marker string) []string
	// PS lists the processes there whose command line holds one of
	// words, as the target itself shows them (its own ps or /proc, in
	// its PID namespace or on its machine): the check that what Marked
	// no longer sees is gone in there too. A place whose Marked already
	// looks from inside returns nil.
	PS(t testing.TB, words ...string) []string
}

// WaitMarked waits until n processes hold the marker in pl, and fails
// the test after 10 s.
func WaitMarked(t testing.TB, pl Place, marker string, n int) {
	t.Helper()
	var got []string
	if !poll(10*time.Second, func() bool { got = pl.Marked(t, marker); return len(got) >= n }) {
		t.Fatalf("%d processes with the marker (%v), want %d", len(got), got, n)
	}
}

// WaitNoneMarked waits until no process holds the marker in pl or within
// has passed, and returns those still there.
func WaitNoneMarked(t testing.TB, pl Place, marker string, within time.Duration) []string {
	var left []string
	poll(within, func() bool { left = pl.Marked(t, marker); return len(left) == 0 })
	return left
}

// WaitPSGone asks pl's PS until none of words shows or within has
// passed, and returns what still shows.
func WaitPSGone(t testing.TB, pl Place, within time.Duration, words ...string) []string {
	var left []string
	poll(within, func() bool { left = pl.PS(t, words...); return len(left) == 0 })
	return left
}

// poll asks done until it holds or within has passed, and says whether it
// held. Nothing tells when another process tree ends, on another machine
// least of all: it polls, every 10 ms (a look that is an exec in the
// target sets a slower pace of its own).
func poll(within time.Duration, done func() bool) bool {
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Dial copies local (an acpterm build for the target) there with
// remote.Install, or finds the copy, and starts the exec server through
// the target's own tool with copts, whose Binary it sets to the copy. The
// client closes when the test ends; the Conn is for a test that kills
// the transport.
func Dial(t testing.TB, tg remote.Target, copts *remote.CommandOptions, local string) (*remote.Client, *remote.Conn, *remote.Installed) {
	t.Helper()
	in, err := remote.Install(Ctx(t), tg, copts, &remote.InstallOptions{Local: local})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(in)
	*copts = *in.Options(*copts)
	cmd, err := remote.Command(tg, copts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn, err := remote.Dial(cmd)
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.NewClient(Ctx(t), conn, nil)
	if err != nil {
		_ = conn.Close()
		t.Fatalf("NewClient through %s: %v; it said: %s", cmd.Args[0], err, conn.Stderr())
	}
	t.Logf("exec server answered its hello %v after %s started", time.Since(start).Round(time.Millisecond), cmd.Args[0])
	t.Cleanup(func() { _ = c.Close() })
	return c, conn, in
}

// FirstByte runs cmd, a transport alone (ssh HOST COMMAND, podman exec,
// kubectl exec), with its stdout copied into w, and returns how long
// after the start its first byte came and how many bytes it wrote in all:
// what the benchmarks put the exec server beside. It fails tb if the
// command does not start, writes nothing or fails.
func FirstByte(tb testing.TB, cmd *exec.Cmd, w io.Writer) (time.Duration, int64) {
	tb.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(out, one); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tb.Fatalf("%s: no output: %v", cmd.Args[0], err)
	}
	first := time.Since(start)
	if _, err := w.Write(one); err != nil {
		tb.Fatal(err)
	}
	n, err := io.Copy(w, out)
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("%q: %v", cmd.Args, err)
	}
	return first, n + 1
}

// FirstOutput is the time from terminal/create of `echo x` through c, an
// open connection, to the command's first output event, in session "s";
// the terminal is released before it returns.
func FirstOutput(tb testing.TB, c *remote.Client) time.Duration {
	tb.Helper()
	sub, err := c.Subscribe("", "")
	if err != nil {
		tb.Fatal(err)
	}
	defer sub.Close()
	ctx := Ctx(tb)
	start := time.Now()
	id := Create(tb, c, &acp.CreateTerminalRequest{Command: "echo", Args: []string{"x"}})
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if ev.Kind == terminal.EventOutput && ev.TerminalID == id {
			break
		}
	}
	el := time.Since(start)
	if _, err := c.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: "s", TerminalID: id}); err != nil {
		tb.Fatal(err)
	}
	Drain(tb, sub, id)
	return el
}

// Drain takes a terminal's events from sub up to its Released.
func Drain(tb testing.TB, sub terminal.Events, id acp.TerminalID) {
	tb.Helper()
	ctx := Ctx(tb)
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if ev.Kind == terminal.EventReleased && ev.TerminalID == id {
			return
		}
	}
}
