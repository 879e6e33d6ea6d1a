package main

import (
	"bufio"
	"bytes"
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
	mustContain(t, "stderr", r.stderr, "acpterm: remote: skipped 100 lines that the target wrote before the exec server's hello")
	if n := strings.Count(r.stderr, "\n"); n > 12 {
		t.Errorf("%d lines on stderr for a 100-line greeting, want a few:\n%s", n, r.stderr)
	}
}

// TestRemoteSSHCopyReplaced: two runs of acpterm run --remote through a
// real sshd. In the first, the agent's confined command tries to rename
// a script of the same size over acpterm's copy on the target (where
// the copy was kept before, ~/.cache/acpterm, or where it is now): it
// cannot. The test then replaces it itself, as anything unconfined
// could; the second run does not run the script, replaces the copy and
// says so.
func TestRemoteSSHCopyReplaced(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	data, cache := t.TempDir(), t.TempDir()
	bin := plainAcpterm(t)
	info, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "planted-ran")
	script := fmt.Sprintf("#!/bin/sh\ntouch %s\nexec %s \"$@\"\n#", marker, bin)
	plant := []byte(script + strings.Repeat("#", int(info.Size())-len(script)-1) + "\n")
	if err := os.WriteFile(filepath.Join(dir, "plant"), plant, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--approve-all", "--remote", "ssh://" + sshtest.Host + dir, "--remote-tool-arg=-F" + s.Config,
		"--remote-tool-arg=-oSetEnv=GORACE=atexit_sleep_ms=0 SHLVL=1 XDG_DATA_HOME=" + data + " XDG_CACHE_HOME=" + cache}
	replaceAll := `for f in "$XDG_CACHE_HOME"/acpterm/*/acpterm "$XDG_DATA_HOME"/acpterm/exec-server/*/acpterm; do if [ -f "$f" ]; then cp plant "$f.new" && mv -f "$f.new" "$f"; fi; done; true`
	r := acpterm(t, opts{plain: true}, append(args, "-p", replaceAll, "--", bin, "agent")...)
	if r.code != 0 {
		t.Fatalf("run 1: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("run 1:\n%s%s", r.stdout, r.stderr)
	copies, _ := filepath.Glob(filepath.Join(data, "acpterm", "exec-server", "*", "acpterm"))
	old, _ := filepath.Glob(filepath.Join(cache, "acpterm", "*", "acpterm"))
	copies = append(copies, old...)
	if len(copies) != 1 {
		t.Fatalf("copies on the target: %v, want one", copies)
	}
	if got, _ := os.ReadFile(copies[0]); bytes.Equal(got, plant) {
		t.Errorf("a confined command replaced the copy %s", copies[0])
	} else {
		if err := os.WriteFile(copies[0]+".new", plant, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(copies[0]+".new", copies[0]); err != nil {
			t.Fatal(err)
		}
	}
	r = acpterm(t, opts{plain: true}, append(args, "-p", "cat marker.txt", "--", bin, "agent")...)
	t.Logf("run 2:\n%s%s", r.stdout, r.stderr)
	if _, err := os.Stat(marker); err == nil {
		t.Error("run 2 ran the planted script")
	}
	if r.code != 0 {
		t.Fatalf("run 2: exit %d", r.code)
	}
	mustContain(t, "run 2's stderr", r.stderr, "acpterm: replaced "+copies[0]+" on ssh://"+sshtest.Host+dir+": it was not the copy acpterm made (its sha256 is ")
	mustContain(t, "run 2's stdout", r.stdout, "only on the target")
	if left := sshtest.WaitNoneRunning("XDG_DATA_HOME", data, 2*time.Second); len(left) > 0 {
		t.Errorf("left running on the target: %v", left)
	}
}
