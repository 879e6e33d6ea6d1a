package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// The wire recorder: the test binary, run by acpterm as its agent with
// ACPTERM_E2E_FAKE_AGENT=wirelog, starts the real agent named by its
// arguments and passes every line between the two, writing each to the
// file wireLogEnv names with its direction and time. It is how the real
// agents' messages are recorded for replay tests (cmd/acpterm/internal/client's
// testdata) and timed.

// wireLogEnv names the file the wire recorder appends to.
const wireLogEnv = "ACPTERM_WIRELOG_FILE"

// wireRecord is one line of a wire log.
type wireRecord struct {
	// Ms is the time since the recorder started, in milliseconds.
	Ms float64 `json:"ms"`
	// Dir is "client" for what the client sent, "agent" for what the
	// agent sent; "client-eof" marks the end of the client's input and
	// "agent-exit" the agent's exit (Msg null), for timing a shutdown.
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

func init() { registerHostile("wirelog", wireLog) }

// maxWireLine bounds a line the recorder passes on: the agents under test
// are real ones, but a recorder that grows without bound is still a bug.
const maxWireLine = 64 << 20

func wireLog() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "wirelog: no agent to run")
		return 2
	}
	logf, err := os.OpenFile(os.Getenv(wireLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirelog:", err)
		return 2
	}
	defer logf.Close()
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	toAgent, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirelog:", err)
		return 2
	}
	fromAgent, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirelog:", err)
		return 2
	}
	// Signals acpterm sends the recorder go to the agent: the recorder
	// must stop as the agent would.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "wirelog:", err)
		return 2
	}
	var mu sync.Mutex
	record := func(dir string, line []byte) {
		msg := json.RawMessage(line)
		if !json.Valid(msg) {
			msg, _ = json.Marshal(string(line))
		}
		b, _ := json.Marshal(wireRecord{Ms: float64(time.Since(start).Microseconds()) / 1000, Dir: dir, Msg: msg})
		mu.Lock()
		defer mu.Unlock()
		logf.Write(append(b, '\n'))
	}
	// The client's side is not waited for: an agent that exits ends the
	// recorder whether or not the client has closed its input, and the
	// process's exit ends that goroutine.
	go func() {
		defer toAgent.Close() // the client's end of input is the agent's
		pass(os.Stdin, toAgent, func(l []byte) { record("client", l) })
		record("client-eof", []byte(`null`))
	}()
	done := make(chan error, 1)
	go func() {
		pass(fromAgent, os.Stdout, func(l []byte) { record("agent", l) })
		err := cmd.Wait()
		record("agent-exit", []byte(`null`))
		done <- err
	}()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode()
			}
			return 0
		}
	}
}

// pass copies lines from r to w, each whole, and gives each to note
// without its newline, before writing it.
func pass(r io.Reader, w io.Writer, note func([]byte)) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		var long []byte
		for err == bufio.ErrBufferFull && len(long) < maxWireLine {
			long = append(long, line...)
			line, err = br.ReadSlice('\n')
		}
		if long != nil {
			line = append(long, line...)
		}
		if len(line) > 0 {
			// Recorded before it is passed on, so that what the other
			// side sends in answer is recorded after it.
			l := line
			if l[len(l)-1] == '\n' {
				l = l[:len(l)-1]
			}
			note(l)
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
