//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/procstat"
)

// A real agent at a real terminal, as a person uses it: tmux is the
// terminal (what it shows is what a person would see, escape sequences
// applied), and the test types at it key by key.

// tmuxPane is one acpterm run in a tmux pane of its own server.
type tmuxPane struct {
	t    *testing.T
	sock string
	log  string // every byte the program wrote to the pane
	pid  int
}

// tmux runs tmux against the pane's server.
func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// startTmux starts bin with args in dir, with env on top of the test's,
// on a 120×40 tmux pane; the pane's whole output is logged from the first
// byte.
func startTmux(t *testing.T, dir string, env []string, bin string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is needed to be the terminal")
	}
	tmp := t.TempDir()
	p := &tmuxPane{t: t, sock: filepath.Join(tmp, "sock"), log: filepath.Join(tmp, "pane.log")}
	// The program waits on a fifo until the pane's output is logged, so
	// that the log has its first byte.
	fifo := filepath.Join(tmp, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("#!/bin/sh\nread _ < " + shellQuote(fifo) + "\nexec env")
	for _, kv := range env {
		script.WriteString(" " + shellQuote(kv))
	}
	for _, w := range append([]string{bin}, args...) {
		script.WriteString(" " + shellQuote(w))
	}
	script.WriteString("\n")
	sh := filepath.Join(tmp, "run.sh")
	if err := os.WriteFile(sh, []byte(script.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	p.tmux("new-session", "-d", "-s", "acpterm", "-x", "120", "-y", "40", "-c", dir, sh)
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
	})
	p.tmux("set-option", "-t", "acpterm", "remain-on-exit", "on")
	p.tmux("pipe-pane", "-t", "acpterm", "-o", "cat >> "+shellQuote(p.log))
	pid, err := strconv.Atoi(strings.TrimSpace(p.tmux("display-message", "-p", "-t", "acpterm", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	p.pid = pid
	// Opening the fifo waits for its reader, the script.
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("\n")
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the writer: open the reading end ourselves.
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("the pane's script never started")
	}
	return p
}

// screen is what the pane shows, one string per row, trailing blanks cut.
func (p *tmuxPane) screen() []string {
	p.t.Helper()
	rows := strings.Split(strings.TrimRight(p.tmux("capture-pane", "-p", "-t", "acpterm"), "\n"), "\n")
	for i, r := range rows {
		rows[i] = strings.TrimRight(r, " ")
	}
	return rows
}

// raw is every byte written to the pane so far.
func (p *tmuxPane) raw() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// waitFor polls the pane (tmux cannot tell us when it changes) until ok
// holds for its screen and its raw output, and fails past timeout.
func (p *tmuxPane) waitFor(what string, timeout time.Duration, ok func(screen []string, raw string) bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok(p.screen(), p.raw()) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s within %v; the screen:\n%s\nraw:\n%q", what, timeout, strings.Join(p.screen(), "\n"), tail(p.raw(), 6000))
		}
		<-tick.C
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitRaw waits until the raw output has want.
func (p *tmuxPane) waitRaw(want string, timeout time.Duration) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("%q", want), timeout, func(_ []string, raw string) bool { return strings.Contains(raw, want) })
}

// typeSlowly sends text a key at a time, each once the one before it is
// echoed on the screen's prompt line.
func (p *tmuxPane) typeSlowly(prompt, typed, text string) string {
	p.t.Helper()
	for _, r := range text {
		p.tmux("send-keys", "-t", "acpterm", "-l", string(r))
		typed += string(r)
		want := strings.TrimRight(prompt+typed, " ") // as screen cuts rows
		p.waitFor(fmt.Sprintf("the prompt line %q", want), 20*time.Second, func(screen []string, _ string) bool {
			return slices.Contains(screen, want)
		})
	}
	return typed
}

// exited waits for the program to end and returns its exit status. tmux
// sometimes leaves the program a zombie it has not reaped, the pane not
// marked dead: /proc says it exited then, and with which status. A
// process of the pane's session still there after it exited was left
// behind, and fails the test; if the program does not end, the
// processes of its session are shown.
func (p *tmuxPane) exited(timeout time.Duration) int {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	for {
		f := strings.Fields(p.tmux("display-message", "-p", "-t", "acpterm", "#{pane_dead} #{pane_dead_status}"))
		code, zombie := zombieStatus(p.pid)
		if len(f) == 2 && f[0] == "1" || zombie {
			if !zombie {
				code, _ = strconv.Atoi(f[1])
			} else if len(f) != 2 || f[0] != "1" {
				p.t.Logf("pid %d exited, a zombie tmux has not reaped: its status from /proc", p.pid)
			}
			if left := p.sessionLeft(10 * time.Second); left != "" {
				p.t.Errorf("left behind in the terminal's session 10s after acpterm exited:\n%s", left)
			}
			assertNoCgroups(p.t, p.pid)
			return code
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("pid %d still running %v after the session's end was typed; the screen:\n%s\nraw:\n%q\nits session:\n%s",
				p.pid, timeout, strings.Join(p.screen(), "\n"), tail(p.raw(), 3000), sessionProcesses(p.pid))
		}
		<-tick.C
	}
}

// sessionLeft returns what of the pane's session is still alive after
// grace, or "" once nothing is. acpterm's cgroup watchdog is in the
// session by design and ends when acpterm's end closes its stdin: an
// instant after acpterm, not with it, so the session is given a moment.
func (p *tmuxPane) sessionLeft(grace time.Duration) string {
	deadline := time.Now().Add(grace)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left := sessionProcesses(p.pid)
		if left == "" || time.Now().After(deadline) {
			return left
		}
		<-tick.C
	}
}

// zombieStatus reports whether pid is a zombie, and its exit status
// (the last field of /proc/PID/stat is the wait status, since Linux 3.5).
func zombieStatus(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 50 || f[0] != "Z" {
		return 0, false
	}
	ws, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(ws).ExitStatus(), true
}

// sessionProcesses lists the live processes of session sid but its
// leader: pid, state and command line.
func sessionProcesses(sid int) string {
	dirs, _ := os.ReadDir("/proc")
	var b strings.Builder
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == sid {
			continue
		}
		st, err := procstat.Read(pid)
		if err != nil || st.Session != sid || st.State == 'Z' || st.State == 'X' {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		fmt.Fprintf(&b, "%d %c %s\n", pid, st.State, strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " "))
	}
	return b.String()
}
