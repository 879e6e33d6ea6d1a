//go:build linux

package terminal

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// defaultPTY is the size most tests ask for: the defaults.
var defaultPTY = &Size{}

func TestPTYIsTheCommandsTerminal(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	out, st := runTerminal(t, m, Request{
		Command: `tty; test -t 0 && test -t 1 && test -t 2 && echo all three; echo "TERM=$TERM"; stty size; ps -o stat= -p $$`,
		PTY:     defaultPTY,
	})
	wantStatus(t, st, ExitStatus{ExitCode: code(0)})
	// s: a session leader; +: in the terminal's foreground process group.
	want := regexp.MustCompile(`^/dev/pts/\d+\nall three\nTERM=xterm-256color\n24 80\n[RS]s\+\n$`)
	if !want.MatchString(out.Text) {
		t.Errorf("output %q, want a match of %s", out.Text, want)
	}
}

func TestPTYSizeAndTERMFromTheRequest(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: `stty size; echo "$TERM"`, PTY: &Size{Cols: 132}, Env: []EnvVar{{"TERM", "vt100"}}})
	if info.PTY == nil || *info.PTY != (Size{132, 24}) {
		t.Errorf("Info.PTY = %v, want 132x24", info.PTY)
	}
	mustWait(t, m, info)
	if got := mustOutput(t, m, info).Text; got != "24 132\nvt100\n" {
		t.Errorf("output %q", got)
	}
}

func TestPTYRendersText(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	tests := []struct{ name, cmd, want string }{
		{"progress bar reads as its last state", `for p in 10 40 70; do printf '\rdownloading %3d%%' $p; done; printf '\r\033[Kdone 100%%\n'`, "done 100%\n"},
		{"colours vanish", `printf '\033[1;32mok\033[0m \033[38;5;196mred\033[m\n'`, "ok red\n"},
		{"full-screen program leaves its last screen", `printf 'before\n\033[?1049h\033[2J\033[Hframe 1'; printf '\033[2J\033[Hframe 2\033[5;10Hbottom\033[?1049l'; echo after`,
			"before\nframe 2\n\n\n\n         bottom\nafter\n"},
		{"wide characters", `echo 日本語 ok`, "日本語 ok\n"},
		{"output written as the command exits is kept", `seq 1 2000 | tail -n 3`, "1998\n1999\n2000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, st := runTerminal(t, m, Request{Command: tt.cmd, PTY: defaultPTY})
			wantStatus(t, st, ExitStatus{ExitCode: code(0)})
			if out.Text != tt.want || out.Truncated {
				t.Errorf("output (-want +got):\n-%q\n+%q (truncated %v)", tt.want, out.Text, out.Truncated)
			}
		})
	}
}

func TestPTYOutputByteLimit(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	limit := uint64(100)
	out, _ := runTerminal(t, m, Request{Command: `seq 1 5000`, PTY: defaultPTY, OutputByteLimit: &limit})
	if !out.Truncated || len(out.Text) > 100 || !strings.HasSuffix(out.Text, "4999\n5000\n") {
		t.Errorf("output %q (truncated %v): want the newest 100 bytes at most, truncated", out.Text, out.Truncated)
	}
}

// waitFor waits until the terminal's raw output contains s.
func waitFor(t *testing.T, m *Manager, info Info, s string) {
	t.Helper()
	sub, err := m.Subscribe(info.SessionID, info.TerminalID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var seen strings.Builder
	for !strings.Contains(seen.String(), s) {
		ev := nextOutput(t, sub)
		seen.Write(ev.Data)
	}
}

func TestPTYSecretPrompt(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	// bash turns echo off before it prints read's prompt.
	info := mustCreate(t, m, Request{Command: "bash", Args: []string{"-c", `read -s -p 'Password: ' pw; echo; echo "got ${#pw} characters"`}, PTY: defaultPTY})
	waitFor(t, m, info, "Password: ")
	if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("hunter2\r")); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
	out := mustOutput(t, m, info)
	if out.Text != "Password:\ngot 7 characters\n" {
		t.Errorf("output %q", out.Text)
	}
	if strings.Contains(out.Text, "hunter2") {
		t.Errorf("the secret is in the output: %q", out.Text)
	}
	mustRelease(t, m, info)
}

func TestPTYEchoesWhatIsTyped(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: `read -r line; echo "line=$line"`, PTY: defaultPTY})
	if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, info)
	if got := mustOutput(t, m, info).Text; got != "hello\nline=hello\n" {
		t.Errorf("output %q", got)
	}
}

func TestPTYResize(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	info := mustCreate(t, m, Request{Command: `read -r _; stty size`, PTY: defaultPTY})
	if err := m.Resize(info.SessionID, info.TerminalID, Size{Cols: 100, Rows: 0}); err != nil {
		t.Fatal(err)
	}
	if size, ok, err := m.PTYSize(info.SessionID, info.TerminalID); err != nil || !ok || size != (Size{100, 24}) {
		t.Errorf("PTYSize = %v, %v, %v; want 100x24", size, ok, err)
	}
	if err := m.Resize(info.SessionID, info.TerminalID, Size{Cols: 100, Rows: 30}); err != nil {
		t.Fatal(err)
	}
	if err := m.Resize(info.SessionID, info.TerminalID, Size{Cols: MaxCols + 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Resize beyond MaxCols: %v, want ErrInvalid", err)
	}
	if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("\r")); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, info)
	if got := mustOutput(t, m, info).Text; got != "\n30 100\n" {
		t.Errorf("output %q, want the new size", got)
	}
}

func TestPTYKillAndExitStatus(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	out, st := runTerminal(t, m, Request{Command: `echo bye; exit 3`, PTY: defaultPTY})
	wantStatus(t, st, ExitStatus{ExitCode: code(3)})
	if out.Text != "bye\n" {
		t.Errorf("output %q", out.Text)
	}

	// A background job and the shell: kill takes the whole tree.
	info := mustCreate(t, m, Request{Command: `sleep 1000 & echo $!; wait`, PTY: defaultPTY})
	waitFor(t, m, info, "\n")
	pids := parsePIDs(t, mustOutput(t, m, info).Text)
	if err := m.Kill(testCtx(t), info.SessionID, info.TerminalID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, mustWait(t, m, info), ExitStatus{Signal: sig("SIGTERM")})
	mustRelease(t, m, info)
	for _, pid := range pids {
		waitDead(t, pid)
	}
}

func TestPTYRefusals(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	_, err := m.Create(testCtx(t), Request{SessionID: "s", Command: "true", PTY: &Size{Cols: 5000}})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("create with 5000 columns: %v, want ErrInvalid", err)
	}
	info := mustCreate(t, m, Request{Command: "true"})
	if err := m.Resize(info.SessionID, info.TerminalID, Size{Cols: 10, Rows: 10}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Resize of a pipe terminal: %v, want ErrInvalid", err)
	}
	if _, ok, err := m.PTYSize(info.SessionID, info.TerminalID); ok || err != nil {
		t.Errorf("PTYSize of a pipe terminal: %v, %v", ok, err)
	}
}

// TestPTYOutputBeforeAPauseArrives: what a program writes before it waits
// for input reaches the reader, however the pty splits it into reads.
func TestPTYOutputBeforeAPauseArrives(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	for range 5 {
		info := mustCreate(t, m, Request{Command: `head -c 50000 /dev/zero | tr '\0' a; printf '\nEND'; read -r _`, PTY: defaultPTY})
		waitFor(t, m, info, "END")
		if _, err := m.Write(testCtx(t), info.SessionID, info.TerminalID, []byte("\r")); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
		mustRelease(t, m, info)
	}
}

// startOnPTY starts argv on a bare pty of the host's and returns its
// master; the command is killed and reaped at the end of the test.
func startOnPTY(t *testing.T, argv ...string) *os.File {
	t.Helper()
	master, tty, err := hostPTY()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	err = cmd.Start()
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return master
}

// TestCopyPTY: copyPTY hands over every byte until the master's EIO, and
// a read deadline ends it at once even while the command never lets the
// master run dry.
func TestCopyPTY(t *testing.T) {
	t.Parallel()
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		master := startOnPTY(t, "head", "-c", "300000", "/dev/zero")
		var n int
		_, err := copyPTY(master, func(p []byte) {
			for _, c := range p {
				if c != 0 {
					t.Fatalf("byte %d: %#x, want 0", n, c)
				}
			}
			n += len(p)
		})
		if !errors.Is(err, syscall.EIO) || n != 300000 {
			t.Errorf("copyPTY: %d bytes, %v; want 300000 bytes, EIO", n, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		master := startOnPTY(t, "yes")
		var n, atDeadline int
		_, err := copyPTY(master, func(p []byte) {
			n += len(p)
			if atDeadline == 0 && n >= 1<<20 {
				atDeadline = n
				if err := master.SetReadDeadline(time.Now()); err != nil {
					t.Fatal(err)
				}
			}
		})
		if !errors.Is(err, os.ErrDeadlineExceeded) || n != atDeadline {
			t.Errorf("copyPTY: %v after %d bytes, the deadline set after %d; want it to end there", err, n, atDeadline)
		}
	})
}
