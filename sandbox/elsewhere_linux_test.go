package sandbox

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// unixServer listens on a pathname unix socket (stream, or datagram) in a
// directory of the host and reports each line it receives.
type unixServer struct {
	path string
	got  chan string
	stop func()
}

func newUnixServer(t *testing.T, network string) *unixServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), network+".sock")
	s := &unixServer{path: path, got: make(chan string, 16)}
	var wg sync.WaitGroup
	switch network {
	case "unix":
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if line, err := bufio.NewReader(c).ReadString('\n'); err == nil {
					s.got <- strings.TrimSpace(line)
				}
				c.Close()
			}
		}()
		s.stop = func() { l.Close(); wg.Wait() }
	case "unixgram":
		c, err := net.ListenPacket("unixgram", path)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 512)
			for {
				n, _, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				s.got <- strings.TrimSpace(string(buf[:n]))
			}
		}()
		s.stop = func() { c.Close(); wg.Wait() }
	}
	t.Cleanup(s.stop)
	return s
}

// received reports whether the server got the sandbox's line before a
// marker the test sends now, after the command has exited. The server
// takes lines in order (datagrams queue in order; connections are
// accepted and read one at a time), and a command's line was queued
// before it exited, so the marker coming first means nothing came.
func (s *unixServer) received(t *testing.T) bool {
	t.Helper()
	network := "unix"
	if strings.HasSuffix(s.path, "unixgram.sock") {
		network = "unixgram"
	}
	c, err := net.Dial(network, s.path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Write([]byte("marker\n"))
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := false
	for {
		select {
		case line := <-s.got:
			switch line {
			case "marker":
				return got
			case "from the sandbox":
				got = true
			default:
				t.Errorf("the server got %q", line)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not get the marker")
		}
	}
}

// TestUnixSocketsDenied: under DenyNetwork a command reaches no pathname
// unix socket of the host, by connect(2) or by sendto(2) from a datagram
// or raw socketpair, nor through io_uring, and makes no socket of a family
// its network namespace does not hold (AF_VSOCK); with the network
// allowed it does.
func TestUnixSocketsDenied(t *testing.T) {
	t.Parallel()
	both(t, testUnixSocketsDenied)
}

func testUnixSocketsDenied(t *testing.T, b box) {
	need(t, true)
	dir := t.TempDir()
	stream, dgram := newUnixServer(t, "unix"), newUnixServer(t, "unixgram")
	for _, mode := range []Mode{Off, ReadOnly, WorkspaceWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			if testing.Short() && mode == ReadOnly {
				// The filter is the same in every mode; Off (a network
				// namespace alone) and WorkspaceWrite (with the mounts
				// and Landlock, and the servers' sockets outside its
				// writable paths, as they are in ReadOnly) cover it.
				t.Skip("-short: the same filter and mounts as in WorkspaceWrite")
			}
			deny := &Policy{Mode: mode, Network: DenyNetwork, Writable: []string{dir}}
			allow := &Policy{Mode: mode, Network: AllowNetwork, Writable: []string{dir}}
			b.wantAct(t, deny, dir, "EPERM", "unix-dial", stream.path)
			b.wantAct(t, deny, dir, "EPERM", "unix-dial", "@acpterm-test-abstract")
			b.wantAct(t, deny, dir, "EPERM", "unix-dgram-pair", dgram.path)
			b.wantAct(t, deny, dir, "EPERM", "raw-pair", dgram.path)
			b.wantAct(t, deny, dir, "EAFNOSUPPORT", "socket", strconv.Itoa(unix.AF_VSOCK))
			b.wantAct(t, deny, dir, "EAFNOSUPPORT", "socket", strconv.Itoa(unix.AF_BLUETOOTH))
			b.wantAct(t, deny, dir, "EAFNOSUPPORT", "socket", strconv.Itoa(unix.AF_PACKET))
			b.wantAct(t, deny, dir, "ENOSYS", "io-uring")
			if s, d := stream.received(t), dgram.received(t); s || d {
				t.Fatalf("under DenyNetwork the host's servers got a line: stream %v, datagram %v", s, d)
			}
			// Pipes between processes still work, and the families the
			// namespace holds can be made.
			b.wantAct(t, deny, dir, "ok", "stream-pair")
			b.wantAct(t, deny, dir, "ok", "seqpacket-pair")
			b.wantAct(t, deny, dir, "ok", "socket", strconv.Itoa(unix.AF_INET))
			b.wantAct(t, deny, dir, "ok", "socket", strconv.Itoa(unix.AF_INET6))
			b.wantAct(t, deny, dir, "ok", "socket", strconv.Itoa(unix.AF_NETLINK))

			if mode == Off {
				return // Off with AllowNetwork is no sandbox at all
			}
			b.wantAct(t, allow, dir, "ok", "unix-dial", stream.path)
			b.wantAct(t, allow, dir, "ok", "unix-dgram-pair", dgram.path)
			b.wantAct(t, allow, dir, "ok", "raw-pair", dgram.path)
			// AF_VSOCK, where this kernel has it: the refusal above is
			// the filter's, not the kernel's.
			if fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
				unix.Close(fd)
				b.wantAct(t, allow, dir, "ok", "socket", strconv.Itoa(unix.AF_VSOCK))
			}
			if s, d := stream.received(t), dgram.received(t); !s || !d {
				t.Errorf("with the network allowed the host's servers got: stream %v, datagram %v", s, d)
			}
		})
	}
}

// TestUnixSockets386: a 32-bit x86 program makes its socket calls through
// socketcall(2), whose arguments the filter cannot see; it is refused
// whole under DenyNetwork, not let through as another architecture.
func TestUnixSockets386(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a linux/386 program")
	}
	need(t, true)
	if unixSocketArches() == nil || nativeAudit() != 0xc000003e {
		t.Skip("x86-64 only")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the 386 program")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	// Only os and syscall: a cold build cache compiles every package the
	// program needs for 386, and with net and fmt that was 40 % more CPU.
	// syscall's socket calls on linux/386 go through socketcall(2).
	prog := `package main

import (
	"os"
	"syscall"
)

func main() {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: os.Args[1]})
	}
	if err != nil {
		os.Stdout.WriteString("refused: " + err.Error() + "\n")
		return
	}
	syscall.Write(fd, []byte("from the sandbox\n"))
	syscall.Close(fd)
	os.Stdout.WriteString("ok\n")
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dial386")
	build := exec.Command(gobin, "build", "-o", bin, src)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=386", "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the 386 program: %v\n%s", err, out)
	}
	srv := newUnixServer(t, "unix")
	if out, err := exec.Command(bin, srv.path).CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Skipf("this kernel runs no 32-bit programs: %v", err)
		}
		t.Fatalf("unsandboxed: %v\n%s", err, out)
	} else if strings.TrimSpace(string(out)) != "ok" || !srv.received(t) {
		t.Fatalf("unsandboxed, the 386 program did not reach the socket: %s", out)
	}
	both(t, func(t *testing.T, b box) {
		cmd := exec.Command(bin, srv.path)
		cmd.Dir = dir
		out, code := b.run(t, &Policy{Mode: ReadOnly, Network: DenyNetwork}, cmd)
		if code != 0 || !strings.HasPrefix(out, "refused:") {
			t.Errorf("under DenyNetwork: status %d, output %q", code, out)
		}
		if srv.received(t) {
			t.Error("the host's server got a line from the 386 program")
		}
	})
}

// TestReadOnlyElsewhere: outside the writable paths nothing changes, not
// even what Landlock does not check: modes, owners and times.
func TestReadOnlyElsewhere(t *testing.T) {
	t.Parallel()
	both(t, testReadOnlyElsewhere)
}

func testReadOnlyElsewhere(t *testing.T, b box) {
	need(t, true)
	root, outside := workspace(t)
	victim := filepath.Join(outside, "victim")
	inside := filepath.Join(root, "src", "mine")
	for _, f := range []string{victim, inside} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			p := &Policy{Mode: mode, Writable: []string{root}}
			// (As root, a chmod 4755 of a shell outside would make a
			// setuid shell for anyone; the test uses a file of its own.)
			for _, op := range []string{"chmod", "chown", "utimes"} {
				b.wantAct(t, p, root, "EROFS", op, victim)
			}
			want := "ok"
			if mode == ReadOnly {
				want = "EROFS"
			}
			b.wantAct(t, p, root, want, "chmod", inside)
			out, code := b.sh(t, p, root, `echo x > "$TMPDIR/f" && chmod 600 "$TMPDIR/f" && echo y > /dev/null && cat "$TMPDIR/f"`)
			if code != 0 || out != "x\n" {
				t.Errorf("TMPDIR and /dev/null: status %d, output %q", code, out)
			}
		})
	}
	after, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the file outside changed: %v %v, was %v %v", after.Mode(), after.ModTime(), before.Mode(), before.ModTime())
	}
}

// TestLandlockAlone: where no user namespace can be had, a policy with
// WithoutMountNamespace runs on Landlock alone, says what it lost, and
// Landlock still refuses every write outside; without the option it
// fails.
// Not parallel: it replaces a package variable the other tests read.
func TestLandlockAlone(t *testing.T) {
	need(t, false)
	saved := namespaceProbe
	namespaceProbe = func() error { return errors.New("user namespaces are disabled") }
	t.Cleanup(func() { namespaceProbe = saved })
	root, outside := workspace(t)

	p := &Policy{Mode: WorkspaceWrite, Writable: []string{root}}
	if _, err := p.Wrap(exec.Command("/bin/true")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Wrap without namespaces = %v, want ErrUnsupported", err)
	}
	p.WithoutMountNamespace = true
	both(t, func(t *testing.T, b box) {
		cmd := exec.Command(os.Args[0], "write", filepath.Join(outside, "f"))
		cmd.Env = append(os.Environ(), actEnv+"=1")
		cmd.Dir = root
		var a *Applied
		if !b.spawner {
			a = wrap(t, p, cmd)
		} else {
			a = newSpawner(t, p).Applied()
		}
		lost := strings.Join(a.Missing, "; ")
		if a.ReadOnlyElsewhere || len(a.ReadOnly) > 0 || !strings.Contains(lost, ".git") || !strings.Contains(lost, "chmod") {
			t.Errorf("Applied %v: want no mounts, and Missing naming .git and chmod", a)
		}
		if b.spawner {
			b.wantAct(t, p, root, "EACCES", "write", filepath.Join(outside, "f"))
		} else if out, _ := cmd.CombinedOutput(); strings.TrimSpace(string(out)) != "EACCES" {
			t.Errorf("write outside: %q, want EACCES", out)
		}
		b.wantAct(t, p, root, "ok", "write", filepath.Join(root, "src", "f"))
		mustNotExist(t, filepath.Join(outside, "f"))
	})
}

// TestPrivatePTS: a confined command can open and use a pseudo-terminal
// (node-pty, script), from a devpts of its own in which the host's
// terminals are not.
func TestPrivatePTS(t *testing.T) {
	t.Parallel()
	both(t, testPrivatePTS)
}

func testPrivatePTS(t *testing.T, b box) {
	need(t, true)
	if !ptysAvailable() {
		t.Skip("no /dev/pts and /dev/ptmx here")
	}
	// A terminal of the host's, which the command must not see.
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	defer tty.Close()
	root, _ := workspace(t)
	for _, mode := range []Mode{ReadOnly, WorkspaceWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			p := &Policy{Mode: mode, Writable: []string{root}}
			b.wantAct(t, p, root, "ok", "pty")
			if got := b.act(t, p, root, "ls", "/dev/pts"); got != "ptmx" {
				t.Errorf("/dev/pts in the sandbox holds %q, want only ptmx (the host has %s)", got, tty.Name())
			}
			if got := b.act(t, p, root, "write", tty.Name()); got == "ok" {
				t.Errorf("wrote to the host's terminal %s", tty.Name())
			}
		})
	}
}
