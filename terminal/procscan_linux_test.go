//go:build linux

package terminal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// endless is a reader that never ends, as an environment pointed at a
// huge mapping would be.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestReadBoundedStops(t *testing.T) {
	buf := readBounded(endless{}, nil, 1<<20)
	if len(buf) != 1<<20 {
		t.Fatalf("read %d bytes from an endless reader, want the bound 1 MiB", len(buf))
	}
	small := readBounded(strings.NewReader("A=1\x00B=2\x00"), make([]byte, 0, 2), 1<<20)
	if string(small) != "A=1\x00B=2\x00" {
		t.Fatalf("read %q", small)
	}
}

// hasMarkerRef is hasMarker written the obvious way.
func hasMarkerRef(environ []byte, markers map[string]bool) bool {
	for kv := range strings.SplitSeq(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, MarkerEnv+"="); ok && markers[v] {
			return true
		}
	}
	return false
}

func FuzzHasMarker(f *testing.F) {
	f.Add([]byte(MarkerEnv+"=t1.n\x00"), "t1.n")
	f.Add([]byte("A=1\x00"+MarkerEnv+"=t1.n"), "t1.n")
	f.Add([]byte("X"+MarkerEnv+"=t1.n\x00"), "t1.n")
	f.Add([]byte(MarkerEnv+"=t1.nn\x00"), "t1.n")
	f.Add([]byte("\x00\x00"+MarkerEnv+"=\x00"), "")
	f.Fuzz(func(t *testing.T, environ []byte, marker string) {
		markers := map[string]bool{marker: true}
		if got, want := hasMarker(environ, markers), hasMarkerRef(environ, markers); got != want {
			t.Fatalf("hasMarker(%q, %q) = %v, want %v", environ, marker, got, want)
		}
	})
}

// hideEnvironEnv makes the test binary hideEnvironHelper.
const hideEnvironEnv = "ACPTERM_TERMINAL_HIDE_ENVIRON"

// hideEnvironHelper shows its environment to /proc/PID/environ as a
// process in the middle of an execve does: empty (its memory map's
// environment bounds are set last). It empties them, says "hidden", and
// on a line from stdin puts them back and says "shown"; it exits when
// stdin ends. It moves the bounds with PR_SET_MM_MAP, the interface made
// for checkpoint and restore, which needs no capability when the
// executable stays the same.
func hideEnvironHelper() int {
	m, err := ownMMMap()
	if err != nil {
		fmt.Println("reading the memory map:", err)
		return 2
	}
	end := m.envEnd
	m.envEnd = m.envStart
	if err := m.set(); err != nil {
		fmt.Println("prctl:", err)
		return 3
	}
	fmt.Println("hidden")
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		return 0
	}
	m.envEnd = end
	if err := m.set(); err != nil {
		fmt.Println("prctl:", err)
		return 3
	}
	fmt.Println("shown")
	_, _ = io.Copy(io.Discard, in)
	return 0
}

// mmMap is the kernel's struct prctl_mm_map.
type mmMap struct {
	startCode, endCode, startData, endData uint64
	startBrk, brk, startStack              uint64
	argStart, argEnd, envStart, envEnd     uint64
	auxv                                   uint64 // a pointer; 0 with auxvSize 0 keeps it
	auxvSize, exeFD                        uint32
}

// ownMMMap reads the calling process's memory map bounds from
// /proc/self/stat (fields 26-28 and 45-51) and brk(2).
func ownMMMap() (*mmMap, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil, err
	}
	// The name (field 2) may hold spaces: count from after it.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	field := func(n int) uint64 {
		v, perr := strconv.ParseUint(fields[n-3], 10, 64)
		if perr != nil && err == nil {
			err = perr
		}
		return v
	}
	brk, _, _ := unix.Syscall(unix.SYS_BRK, 0, 0, 0)
	m := &mmMap{
		startCode: field(26), endCode: field(27), startStack: field(28),
		startData: field(45), endData: field(46), startBrk: field(47), brk: uint64(brk),
		argStart: field(48), argEnd: field(49), envStart: field(50), envEnd: field(51),
		exeFD: ^uint32(0),
	}
	return m, err
}

func (m *mmMap) set() error {
	return unix.Prctl(unix.PR_SET_MM, unix.PR_SET_MM_MAP, uintptr(unsafe.Pointer(m)), unsafe.Sizeof(*m), 0)
}

// TestProcScanRechecksEmptyEnvironment: a marked process whose
// environment reads empty when the scan passes (as one in the middle of
// an execve does) is looked at again, and killed once its environment
// shows the marker. Before the recheck, such a process (a setsid
// descendant exec'ing at the moment of release) outlived its terminal.
func TestProcScanRechecksEmptyEnvironment(t *testing.T) {
	const marker = "t-hidden.1"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hideEnvironEnv+"=1", MarkerEnv+"="+marker)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		_ = cmd.Process.Kill()
		stdin.Close()
		<-exited
	}()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	go func() { exited <- cmd.Wait() }()
	if line != "hidden\n" {
		t.Fatalf("helper said %q", line)
	}
	pid := cmd.Process.Pid
	markers := map[string]bool{marker: true}

	killed, unsure := scanProc(markers)
	if killed != 0 {
		t.Fatalf("the scan killed %d processes, none of which showed the marker", killed)
	}
	found := false
	for _, p := range unsure {
		found = found || p == pid
	}
	if !found {
		t.Fatalf("pid %d, with an empty environment, is not among the scan's unsure ones %v", pid, unsure)
	}

	if _, err := io.WriteString(stdin, "show\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || line != "shown\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	if !recheck(markers, unsure) {
		t.Fatal("the recheck killed nothing")
	}
	err = <-exited
	exited <- err // for the deferred cleanup
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want SIGKILL", err)
	}
}

// TestCheckKillLeavesTheUnmarked: a process with its environment readable
// and no marker is neither killed nor unsure, and neither is a zombie,
// whose environment reads empty too.
func TestCheckKillLeavesTheUnmarked(t *testing.T) {
	// A shell that says it runs: Start returns once the exec began (the
	// close-on-exec pipe closed), before the kernel has set the new
	// program's environment up, which then reads empty (unsure, rightly);
	// the shell's line comes after.
	cmd := exec.Command("/bin/sh", "-c", "echo running; read x")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "running\n" {
		t.Fatalf("the shell said %q, %v", line, err)
	}
	markers := map[string]bool{"t-none.1": true}
	if _, k, u := checkKill(cmd.Process.Pid, markers, nil); k || u {
		t.Fatalf("an unmarked live process: killed %v, unsure %v", k, u)
	}
	// A zombie: killed, not reaped; waitid with WNOWAIT says when it is one.
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if _, k, u := checkKill(cmd.Process.Pid, markers, nil); k || u {
		t.Fatalf("a zombie: killed %v, unsure %v", k, u)
	}
}
