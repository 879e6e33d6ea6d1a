package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/probe"
	"github.com/acpterm/acpterm/internal/podmantest"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/acpterm/acpterm/internal/sshtest"
)

// The tests of acpterm run --remote podman://CONTAINER against a real
// podman container of busybox-static (internal/podmantest): no libc
// there, so the acpterm under test is a static build, which copies itself
// in (remote.Install) as a user's would.

// needContainer starts a container for the test, or skips it when this
// machine cannot run one.
func needContainer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no containers")
	}
	if why := podmantest.Missing(); why != "" {
		t.Skip(why)
	}
	return podmantest.Start(t, podmantest.Options{})
}

var static struct {
	once sync.Once
	bin  string
	err  error
}

// staticAcpterm is acpterm built with CGO_ENABLED=0, next to the
// package's other builds: what runs in a container without libc. The
// build is shared (proctest.GoBuildEnv) with the remote package's.
func staticAcpterm(t *testing.T) string {
	t.Helper()
	static.once.Do(func() {
		dir := filepath.Join(filepath.Dir(acptermBin), "static")
		if static.err = os.MkdirAll(dir, 0o755); static.err == nil {
			static.bin, static.err = proctest.GoBuildEnv(dir, "acpterm", []string{"CGO_ENABLED=0"}, "build", acptermPkg)
		}
	})
	if static.err != nil {
		t.Fatalf("building a static acpterm: %v", static.err)
	}
	return static.bin
}

// TestRemotePodman: acpterm run --remote podman://CONTAINER/ws runs the
// agent's commands in the container, says so, passes the probe there, and
// a kill -9 of acpterm leaves nothing of a command running in it within
// 2 s.
func TestRemotePodman(t *testing.T) {
	t.Parallel()
	name := needContainer(t)
	bin := staticAcpterm(t)
	podmantest.Exec(t, name, "sh", "-c", "echo only in the container > "+podmantest.WS+"/marker.txt")
	target := "podman://" + name + podmantest.WS

	t.Run("run", func(t *testing.T) {
		r := runBinary(t, bin, opts{}, "run", "--approve-all", "--remote", target, "-p", "cat marker.txt\npwd", "--", acptermBin, "agent")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, "stdout", r.stdout,
			"✓ cat marker.txt [execute]\n  │ only in the container\n  └ exit 0 · ",
			"✓ pwd [execute]\n  │ "+podmantest.WS+"\n  └ exit 0 · ",
			" · on podman://"+name+" · sandbox: workspace-write\n")
		mustContain(t, "stderr", r.stderr, "acpterm: copied "+bin+" ")
	})

	t.Run("probe", func(t *testing.T) {
		report := filepath.Join(t.TempDir(), "probe.json")
		r := runBinary(t, bin, opts{}, "run", "--approve-all", "--remote", target, "-p", "go", "--", plainAcpterm(t), "probe", "--json", report)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, "stdout", r.stdout, "passes every normative case")
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var rep probe.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Cases) != len(probe.Cases()) || rep.Summary.Fail != 0 {
			t.Errorf("%d cases of %d, summary %+v", len(rep.Cases), len(probe.Cases()), rep.Summary)
		}
		for _, c := range rep.Cases {
			if c.Normative && c.Result != probe.ResultPass {
				t.Errorf("normative case %s: %s: %s", c.ID, c.Result, c.Observed)
			}
			if c.ID == "cwd-default" && !strings.Contains(c.Observed, `"`+podmantest.WS+`"`) {
				t.Errorf("cwd-default: %s; want the container's %s", c.Observed, podmantest.WS)
			}
		}
	})

	t.Run("killed", func(t *testing.T) {
		mark := newMark(t)
		// A command that ignores SIGTERM, with a setsid descendant.
		line := remoteMarkVar + "=" + mark + " sh -c 'trap \"\" TERM; setsid sleep 1051 & sleep 1052; wait'"
		cmd := exec.Command(bin, "run", "--approve-all", "--sandbox", "off", "--remote", target, "-p", line, "--", acptermBin, "agent")
		cmd.Dir = t.TempDir()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// The container's processes are this machine's too: /proc shows
		// them, with their environment.
		deadline := time.Now().Add(30 * time.Second)
		for len(sshtest.Running(remoteMarkVar, mark)) < 3 {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("the command did not start in the container within 30 s\nstderr:\n%s", &stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		start := time.Now()
		if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
			// What tells a slow end from a missed one: whether the exec
			// server was still there, and whether the rest went later.
			ps := podmantest.Exec(t, name, "ps", "-o", "pid,ppid,stat,args")
			later := sshtest.WaitNoneRunning(remoteMarkVar, mark, 5*time.Second)
			t.Errorf("2 s after kill -9 of acpterm, still running in the container: %v (5 s later: %v)\nps in the container at 2 s:\n%s", left, later, ps)
		} else {
			t.Logf("nothing left in the container %v after kill -9 of acpterm", time.Since(start).Round(time.Millisecond))
		}
		if left := podmantest.WaitPSGone(t, name, 2*time.Second, "sleep 1051", "sleep 1052", "exec-server"); len(left) > 0 {
			t.Errorf("ps in the container shows %q", left)
		}
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("acpterm still running 20 s after kill -9")
		}
	})
}

// TestRemotePodmanDynamicBuild: acpterm as a default build makes it here
// (linked against libc when a C compiler is present) runs the agent's
// commands in a container without libc: it builds a static copy of
// itself for the container once, says so, and the next run finds the
// copy there without building or copying anything.
func TestRemotePodmanDynamicBuild(t *testing.T) {
	t.Parallel()
	name := needContainer(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the static copy with")
	}
	// A copy written now: acpterm builds from its checkout only while no
	// source file changed after the executable was written, and the
	// shared build may be older than a file checked out again since.
	bin := filepath.Join(t.TempDir(), "acpterm")
	copyFile(t, acptermBin, bin, 0o755)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	f.Close()
	if !dynamic {
		t.Skip("go build makes a static acpterm here")
	}
	state := t.TempDir()
	target := "podman://" + name + podmantest.WS
	for i, want := range []string{"acpterm: built a static copy for linux/", ""} {
		// The first run compiles acpterm without cgo: from a cold build
		// cache, beside the rest of the suite on two CPUs, that is more
		// than the usual minute.
		bound := map[int]time.Duration{0: 5 * time.Minute}[i]
		r := runBinary(t, bin, opts{env: []string{"XDG_STATE_HOME=" + state}, bound: bound}, "run", "--approve-all", "--remote", target, "-p", "echo in-the-container", "--", acptermBin, "agent")
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, r.code, r.stdout, r.stderr)
		}
		t.Logf("run %d: %s", i+1, strings.TrimSpace(r.stderr))
		mustContain(t, "stdout", r.stdout, "│ in-the-container\n")
		mustContain(t, "stderr", r.stderr, want)
		if i == 1 && (strings.Contains(r.stderr, "built") || strings.Contains(r.stderr, "copied")) {
			t.Errorf("the second run built or copied again:\n%s", r.stderr)
		}
	}
	copies, _ := filepath.Glob(filepath.Join(state, "acpterm", "static", "*", "linux-*", "acpterm"))
	if len(copies) != 1 {
		t.Errorf("static copies kept: %v, want one", copies)
	}
}

// TestMCPSDKRemotePodman: acpterm mcp --remote podman://CONTAINER/ws,
// driven by the MCP Go SDK's client, runs exec_command in the container
// (its marker file, its directory), on a pty there with tty.
func TestMCPSDKRemotePodman(t *testing.T) {
	t.Parallel()
	name := needContainer(t)
	bin := staticAcpterm(t)
	podmantest.Exec(t, name, "sh", "-c", "echo only in the container > "+podmantest.WS+"/marker.txt")
	cs := mcpBinary(t, bin, nil, "mcp", "--remote", "podman://"+name+podmantest.WS)
	text, _ := callTool(t, cs, "exec_command", map[string]any{"cmd": "cat marker.txt; pwd"})
	mustContain(t, "exec_command's output", outputOf(text), "only in the container\n", podmantest.WS+"\n")
	text, _ = callTool(t, cs, "exec_command", map[string]any{"cmd": "tty", "tty": true})
	mustContain(t, "tty's output", outputOf(text), "/dev/pts/")
}
