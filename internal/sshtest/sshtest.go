//go:build linux

package sshtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// SSHD is the sshd that Start runs.
const SSHD = "/usr/sbin/sshd"

// Host is the name of the target in Server.Config: `ssh -F CONFIG
// target`, or ssh://target in acpterm's target grammar.
const Host = "target"

// Server is a running sshd that lets one key in, as the current user,
// and the ssh client config that reaches it.
type Server struct {
	// Dir holds the keys and the configs.
	Dir string
	// Config is an ssh client config whose Host "target" reaches the
	// server with the client key, the host key pinned and no prompts.
	// It sends two variables, which the server accepts:
	// GORACE=atexit_sleep_ms=0, because the tests run race-built binaries
	// on the target and each of their exits (the sandbox's helpers are
	// more of them) would otherwise sleep a second; and SHLVL=1, because
	// bash, when it is the user's login shell, reads ~/.bashrc for a
	// command sent over ssh only as a top-level shell (SHLVL unset or
	// 0). A user's .bashrc is not what is under test, and one seen
	// here (pyenv's rehash) takes a lock file that concurrent sessions
	// wait on and that a session killed in it leaves behind, stalling
	// every later session for a minute. The server also accepts
	// XDG_DATA_HOME and XDG_CACHE_HOME, which a test sets (ssh -o
	// SetEnv=..., with the two above) to keep what acpterm writes in the
	// target user's directories in directories of its own.
	Config string
	Port   int
	User   string

	sshd *exec.Cmd
	done chan struct{} // closed when sshd's log has ended
}

// Missing says why Start cannot run here ("" when it can).
func Missing() string {
	if _, err := os.Stat(SSHD); err != nil {
		return SSHD + " is missing: apt-get install -y openssh-server (.ci/run does)"
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		return "no ssh client in PATH"
	}
	return ""
}

// Start starts sshd on a free port of 127.0.0.1 with a fresh host key and
// client key in dir (which the caller removes), and returns once it
// listens.
func Start(dir string) (*Server, error) {
	if why := Missing(); why != "" {
		return nil, errors.New(why)
	}
	s := &Server{Dir: dir, User: "root"}
	if u := os.Getenv("USER"); u != "" {
		s.User = u
	}
	for _, k := range []string{"host", "client"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "client.pub"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	// sshd wants its privilege-separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, err
	}
	if s.Port, err = freePort(); err != nil {
		return nil, err
	}
	sshdConfig := filepath.Join(dir, "sshd_config")
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
UsePAM no
StrictModes no
PidFile none
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel INFO
AcceptEnv GORACE SHLVL XDG_DATA_HOME XDG_CACHE_HOME
`, s.Port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"))
	if err := os.WriteFile(sshdConfig, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	hostPub, err := os.ReadFile(filepath.Join(dir, "host.pub"))
	if err != nil {
		return nil, err
	}
	known := fmt.Sprintf("[127.0.0.1]:%d %s", s.Port, hostPub)
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known), 0o600); err != nil {
		return nil, err
	}
	s.Config = filepath.Join(dir, "ssh_config")
	client := fmt.Sprintf(`Host %s
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
  SetEnv GORACE=atexit_sleep_ms=0 SHLVL=1
`, Host, s.Port, s.User, filepath.Join(dir, "client"), filepath.Join(dir, "known_hosts"))
	if err := os.WriteFile(s.Config, []byte(client), 0o600); err != nil {
		return nil, err
	}
	if err := s.start(sshdConfig); err != nil {
		return nil, err
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs sshd in the foreground, logging to stderr, and waits for the
// line that says it listens; the rest of its log is drained.
func (s *Server) start(config string) error {
	s.sshd = exec.Command(SSHD, "-D", "-e", "-f", config)
	stderr, err := s.sshd.StderrPipe()
	if err != nil {
		return err
	}
	if err := s.sshd.Start(); err != nil {
		return fmt.Errorf("starting sshd: %v", err)
	}
	s.done = make(chan struct{})
	ready := make(chan error, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		var log []string
		signalled := false
		for sc.Scan() {
			if signalled {
				continue
			}
			log = append(log, sc.Text())
			if strings.Contains(sc.Text(), "Server listening on") {
				ready <- nil
				signalled = true
			}
		}
		if !signalled {
			ready <- fmt.Errorf("sshd exited: %s", strings.Join(log, "\n"))
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			s.Close()
			return err
		}
	case <-time.After(10 * time.Second):
		s.Close()
		return errors.New("sshd did not listen within 10 s")
	}
	return nil
}

// Close stops sshd (sessions it runs go with it) and waits for it.
func (s *Server) Close() {
	if s.sshd == nil || s.sshd.Process == nil {
		return
	}
	_ = s.sshd.Process.Kill()
	_ = s.sshd.Wait()
	<-s.done
	s.sshd = nil
}

// SSHArgs are the options that make ssh use the server's config, for
// ssh itself or for a program that passes options on to ssh.
func (s *Server) SSHArgs() []string { return []string{"-F", s.Config} }

// Running lists the live processes (zombies count as dead) whose
// environment holds name=value: what a test's commands left running on
// the target, each started with its own marker.
func Running(name, value string) []int {
	want := []byte(name + "=" + value + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		if proctest.Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitNoneRunning polls /proc (another process tree's end sends no
// notification) until no process holds name=value, or within has passed;
// it returns those still running.
func WaitNoneRunning(name, value string, within time.Duration) []int {
	deadline := time.Now().Add(within)
	for {
		pids := Running(name, value)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
}
