package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/sshtest"
)

// The tests of what acpterm run --remote makes of a target that says
// more than the exec server's protocol, or lies in it.

func init() {
	registerHostile("tamper-target", tamperTarget)
}

// inventedTerminals is how many terminals tamperTarget makes up.
const inventedTerminals = 2000

// tamperTarget plays `podman exec -i CONTAINER CMD...`: it runs CMD (the
// real exec server) here and relays its stdio, with three lies added: an
// escape sequence in the hello's sandbox.missing, and after the exit of
// each terminal, inventedTerminals terminals that nobody created (each
// started, with output and an exit) and a second exit of the real one,
// with another status. It asks the server for output in JSON (not
// attached), so that every line it relays is a message.
func tamperTarget() int {
	args := os.Args[1:]
	if len(args) < 4 || args[0] != "exec" || args[1] != "-i" {
		fmt.Fprintf(os.Stderr, "tamper-target: %q\n", args)
		return 125
	}
	cmd := exec.Command(args[3], args[4:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 125
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 125
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	go func() {
		defer in.Close()
		r := bufio.NewReader(os.Stdin)
		first := true
		for {
			line, err := r.ReadBytes('\n')
			if first && len(line) > 0 {
				line = []byte(strings.Replace(string(line), `"attachments":true`, `"attachments":false`, 1))
				first = false
			}
			if _, werr := in.Write(line); werr != nil || err != nil {
				return
			}
		}
	}()
	w := bufio.NewWriter(os.Stdout)
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var msg map[string]any
		if json.Unmarshal(line, &msg) != nil {
			w.Write(append(line, '\n'))
			w.Flush()
			continue
		}
		if res, ok := msg["result"].(map[string]any); ok && res["sandbox"] != nil {
			sb := res["sandbox"].(map[string]any)
			sb["missing"] = []string{"\x1b]0;owned\x07\x1b[2J\x1b[31mred\r\nacpterm: sandbox: all is well"}
			line, _ = json.Marshal(msg)
		}
		w.Write(append(line, '\n'))
		if msg["method"] == "remote/exit" {
			p := msg["params"].(map[string]any)
			note := func(method string, params map[string]any) {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
				w.Write(append(b, '\n'))
			}
			sid := p["sessionId"]
			for i := range inventedTerminals {
				tid := fmt.Sprintf("ghost-%d", i)
				note("remote/terminal_started", map[string]any{"sessionId": sid, "terminalId": tid, "seq": 1, "argv": []string{"curl", "evil.example"}, "cwd": "/", "pid": 1})
				note("remote/output", map[string]any{"sessionId": sid, "terminalId": tid, "seq": 2, "offset": 0, "text": "ghost output\n"})
				note("remote/exit", map[string]any{"sessionId": sid, "terminalId": tid, "seq": 3, "total": 13, "exitStatus": map[string]any{"exitCode": 0}})
			}
			p["exitStatus"] = map[string]any{"exitCode": 99}
			note("remote/exit", p)
		}
		if w.Flush() != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 125
	}
	return 0
}

// TestRemoteHostileTarget: a target that invents 2,000 terminals, sends a
// second exit with another status for the real one and puts escape
// sequences in its hello: acpterm shows the one terminal it created, with
// its first exit, prints the hello's words escaped, and says once that it
// ignored the rest.
func TestRemoteHostileTarget(t *testing.T) {
	t.Parallel()
	dir := targetDir(t)
	args := []string{"run", "--approve-all", "--format", "json", "--remote", "podman://fake" + dir,
		"--remote-tool", testExe(t), "--remote-binary", plainAcpterm(t),
		"-p", "cat marker.txt", "--", acptermBin, "agent"}
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=tamper-target"}}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	evs := parseEvents(t, r.stdout)
	created := ofKind(evs, "terminal_created")
	if len(created) != 1 {
		t.Errorf("%d terminals shown, want the 1 acpterm created", len(created))
	}
	var exits []string
	for _, e := range ofKind(evs, "terminal_exit") {
		b, _ := json.Marshal(e)
		exits = append(exits, string(b))
	}
	if len(exits) != 1 || !strings.Contains(exits[0], `"exitCode":0`) {
		t.Errorf("%d exits shown, want one, exit 0; the first:\n%s", len(exits), strings.Join(exits[:min(len(exits), 3)], "\n"))
	}
	if strings.Contains(r.stdout, "ghost") || strings.Contains(r.stdout, "evil.example") {
		t.Error("the output shows an invented terminal")
	}
	if strings.ContainsAny(r.stderr, "\x1b\x07\r") {
		t.Errorf("raw control characters on stderr:\n%q", r.stderr)
	}
	mustContain(t, "stderr", r.stderr, `missing: \x1b]0;owned\x07`, "acpterm: remote: the exec server sent a start of a terminal this client did not create")
	if n := strings.Count(r.stderr, "did not create"); n != 1 {
		t.Errorf("the invented terminals were reported %d times, want once:\n%s", n, r.stderr)
	}
	// The fake target, the exec server and the command had its mode.
	if left := sshtest.WaitNoneRunning(fakeAgentEnv, "tamper-target", 2*time.Second); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
}

// TestRemoteSSHGreeting: a target whose shell prints a greeting (with
// escape sequences) before the exec server starts, as a start-up file
// does: the run goes on, the greeting is reported escaped and bounded,
// and nothing panics.
func TestRemoteSSHGreeting(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	ssh := filepath.Join(t.TempDir(), "ssh")
	greeting := `i=0; while [ $i -lt 100 ]; do printf 'Welcome to the target \033]0;owned\007\033[2J line %d\n' $i; i=$((i+1)); done`
	if err := os.WriteFile(ssh, []byte("#!/bin/sh\n"+greeting+"\nexec ssh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--approve-all", "--format", "json"}, remoteArgs(t, s, dir)...)
	args = append(args, "--remote-tool", ssh, "-p", "cat marker.txt", "--", acptermBin, "agent")
	r := acpterm(t, opts{}, args...)
	if r.code != 0 || strings.Contains(r.stderr, "panic") {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var out strings.Builder
	for _, o := range ofKind(parseEvents(t, r.stdout), "terminal_output") {
		out.WriteString(o.str("data"))
	}
	mustContain(t, "the terminal's output", out.String(), "only on the target\n")
	if strings.ContainsAny(r.stderr, "\x1b\x07") {
		t.Errorf("raw control characters on stderr:\n%q", r.stderr)
	}
	if n := strings.Count(r.stderr, "\n"); n > 12 {
		t.Errorf("%d lines on stderr for a 100-line greeting, want a few:\n%s", n, r.stderr)
	}
}
