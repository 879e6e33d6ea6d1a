package remote

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CommandOptions configure Command.
type CommandOptions struct {
	// Binary is the acpterm executable on the target; "" means "acpterm"
	// (looked up in the target's PATH). Set it to Installed.Path after
	// Install, or to one already on the target (acpterm's
	// --remote-binary), which makes Install copy nothing.
	Binary string
	// ServerArgs are the exec-server's flags (--sandbox MODE, --network
	// NET, ...). Command adds --cwd DIR for a target with a directory.
	ServerArgs []string
	// Tool is the local program of the transport; "" means ssh, podman,
	// docker or kubectl, looked up in PATH.
	Tool string
	// ToolArgs are options for the tool put before the target (for ssh,
	// -F FILE, -o Option=value).
	ToolArgs []string
	// SHA256, when set, is Binary's SHA-256 in hex (Installed.SHA256):
	// the target checks it with its system's tool before it runs Binary,
	// and refuses a file whose content differs (exit 126, saying so on
	// stderr). Installed.Options sets it.
	SHA256 string
	// Transient: Binary was copied for this one run (Installed.Transient);
	// its directory is removed once it has run.
	Transient bool
}

// checkedArgv is the command that runs argv (Binary first) on the target
// as opts ask: after checking Binary's SHA-256, or removing a transient
// copy after it ran. One line of POSIX sh without "!", as Install's.
func checkedArgv(opts *CommandOptions, argv []string) []string {
	var script string
	switch {
	case opts.SHA256 != "":
		sum := ShellQuote(opts.SHA256)
		script = hashToolScript +
			`if [ -z "$hs" ]; then echo "acpterm: the target has no sha256sum to check $1 with; not running it" >&2; exit 126; fi; ` +
			`h=$($hs < "$1") || exit 126; h=${h%% *}; if [ "$h" = ` + sum + ` ]; then exec "$@"; fi; ` +
			`echo "acpterm: $1 is not the copy acpterm made (its sha256 is $h, not "` + sum + `"): not running it; the next run replaces it" >&2; exit 126`
	case opts.Transient:
		script = `"$@"; s=$?; rm -rf "${1%/*}"; exit $s`
	default:
		return argv
	}
	return append([]string{"/bin/sh", "-c", script, "acpterm"}, argv...)
}

// Command returns the command that starts the exec server on the target
// through the user's own tool, talking on its stdin and stdout:
//
//	ssh -T [-l USER] [-p PORT] -- HOST 'BINARY' exec-server [--cwd 'DIR'] ARGS
//	podman exec -i CONTAINER BINARY exec-server [--cwd DIR] ARGS
//	docker exec -i CONTAINER BINARY exec-server [--cwd DIR] ARGS
//	kubectl [--context CTX] exec -i -n NS POD [-c CONTAINER] -- BINARY exec-server [--cwd DIR] ARGS
//
// With opts.SHA256 (a copy made by Install, see Installed.Options) BINARY
// is run through /bin/sh on the target, which checks the file's SHA-256
// first and execs it only when it matches.
//
// ssh runs its command through the remote user's login shell, so each word
// is single-quoted for a POSIX shell there; the others pass argv as is.
// ssh's "--" ends its options, so a host cannot be taken for one (nor can
// it start with "-": ParseTarget refuses that).
//
// The command is made to start in a process group of its own (on Unix),
// so that a Ctrl-C at the caller's terminal reaches the caller alone, which
// can cancel the turn, and does not kill the transport and with it every
// command on the target. Keep that when adding to its SysProcAttr. Start
// it with Dial.
func Command(t Target, opts *CommandOptions) (*exec.Cmd, error) {
	if opts == nil {
		opts = &CommandOptions{}
	}
	bin := opts.Binary
	if bin == "" {
		bin = "acpterm"
	}
	server := []string{bin, "exec-server"}
	if t.Dir != "" {
		server = append(server, "--cwd", t.Dir)
	}
	server = append(server, opts.ServerArgs...)
	argv, err := transportArgv(t, opts, checkedArgv(opts, server))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	ownProcessGroup(cmd)
	return cmd, nil
}

// transportArgv is the local command that runs the words of remote on
// the target through the transport's tool, with the tool's stdin and
// stdout connected to the remote command's.
func transportArgv(t Target, opts *CommandOptions, remote []string) ([]string, error) {
	var argv []string
	switch t.Kind {
	case SSH:
		if t.Host == "" {
			return nil, errors.New("remote: ssh target without a host")
		}
		argv = append([]string{"ssh", "-T"}, opts.ToolArgs...)
		if t.User != "" {
			argv = append(argv, "-l", t.User)
		}
		if t.Port != 0 {
			argv = append(argv, "-p", strconv.Itoa(t.Port))
		}
		words := make([]string, len(remote))
		for i, w := range remote {
			words[i] = ShellQuote(w)
		}
		// exec: the command replaces the login shell, so the process
		// sshd started is the command itself.
		argv = append(argv, "--", t.Host, "exec "+strings.Join(words, " "))
	case Podman, Docker:
		if t.Container == "" {
			return nil, errors.New("remote: container target without a container")
		}
		argv = append(append([]string{string(t.Kind)}, opts.ToolArgs...), "exec", "-i", t.Container)
		argv = append(argv, remote...)
	case Kubernetes:
		if t.Namespace == "" || t.Pod == "" {
			return nil, errors.New("remote: k8s target without a namespace and pod")
		}
		argv = append([]string{"kubectl"}, opts.ToolArgs...)
		if t.Context != "" {
			argv = append(argv, "--context", t.Context)
		}
		argv = append(argv, "exec", "-i", "-n", t.Namespace, t.Pod)
		if t.Container != "" {
			argv = append(argv, "-c", t.Container)
		}
		argv = append(append(argv, "--"), remote...)
	default:
		return nil, fmt.Errorf("remote: unknown target kind %q", t.Kind)
	}
	if opts.Tool != "" {
		argv[0] = opts.Tool
	}
	return argv, nil
}

// ShellQuote quotes s as one word for a POSIX shell: in single quotes,
// with each single quote written as '\”.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stderrTail is how much of the transport's stderr a Conn keeps for its
// error messages.
const stderrTail = 8 << 10

// Conn is a transport process as a byte stream: reads come from its
// stdout, writes go to its stdin. Closing it closes the process's stdin,
// which makes the server end everything (the dead-man rule), and waits a
// bounded time for the process before killing it.
type Conn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	tail   *tailWriter

	waitOnce sync.Once
	waited   chan struct{}
	waitErr  error
	closeOne sync.Once
	closeErr error
}

// DialWait is how long Conn.Close waits for the transport to exit after
// closing its stdin before it kills it.
const DialWait = 5 * time.Second

// Dial starts cmd (from Command) with pipes on its stdin and stdout. When
// cmd.Stderr is nil, the end of the transport's stderr is kept for
// Conn.Stderr (ssh's own message for an unreachable host) and not shown.
func Dial(cmd *exec.Cmd) (*Conn, error) {
	c := &Conn{cmd: cmd, waited: make(chan struct{})}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if c.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if cmd.Stderr == nil {
		c.tail = &tailWriter{max: stderrTail}
		cmd.Stderr = c.tail
	}
	// A descendant of the tool that keeps its stderr must not hold Wait.
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go c.wait()
	return c, nil
}

func (c *Conn) wait() {
	c.waitErr = c.cmd.Wait()
	close(c.waited)
}

// Read reads the transport's stdout.
func (c *Conn) Read(p []byte) (int, error) { return c.stdout.Read(p) }

// Write writes to the transport's stdin.
func (c *Conn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close closes the transport's stdin, waits up to DialWait for it to
// exit, kills it if it has not, and returns how it ended. Idempotent.
func (c *Conn) Close() error {
	c.closeOne.Do(func() {
		_ = c.stdin.Close()
		t := time.NewTimer(DialWait)
		defer t.Stop()
		select {
		case <-c.waited:
		case <-t.C:
			_ = c.cmd.Process.Kill()
			<-c.waited
		}
		c.closeErr = c.waitErr
	})
	return c.closeErr
}

// Process is the transport's process (for its PID).
func (c *Conn) Process() *os.Process { return c.cmd.Process }

// Exited is closed when the transport's process has exited.
func (c *Conn) Exited() <-chan struct{} { return c.waited }

// Stderr is the end of what the transport wrote to its stderr (when Dial
// kept it), for an error message: ssh's "Connection refused", kubectl's
// "pods not found". It is the tool's text, not sanitized.
func (c *Conn) Stderr() string {
	if c.tail == nil {
		return ""
	}
	return c.tail.String()
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
