package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/probe"
	"github.com/acpterm/acpterm/internal/sshtest"
)

// The tests of acpterm run --remote through a real OpenSSH sshd on
// 127.0.0.1 (internal/sshtest), the target being this machine: what
// proves that a command ran there is its directory (a marker file only
// in the target's DIR) and ssh's own variables.

// needSSHD starts a sshd for the test, or skips it when there is none.
func needSSHD(t *testing.T) *sshtest.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no sshd")
	}
	if why := sshtest.Missing(); why != "" {
		t.Skip(why)
	}
	s, err := sshtest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// remoteArgs are the flags that reach the test's target through s, with
// acpterm there already (the copy has its own test).
func remoteArgs(t *testing.T, s *sshtest.Server, dir string) []string {
	return []string{"--remote", "ssh://" + sshtest.Host + dir, "--remote-tool-arg=-F" + s.Config,
		"--remote-binary", plainAcpterm(t)}
}

// targetDir is a directory of the target holding marker.txt, which the
// directory acpterm runs in does not have.
func targetDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "marker.txt"), []byte("only on the target\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newMark(t *testing.T) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// remoteMarkVar marks the commands a test runs on the target, so that
// what is left of them can be found there.
const remoteMarkVar = "ACPTERM_REMOTE_MARK"

// TestRemoteSSHRun: the built-in agent's commands run in the target's
// directory, through ssh, and the session's cwd the agent is given is
// that directory.
func TestRemoteSSHRun(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	args := append([]string{"run", "--approve-all", "--format", "json"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "cat marker.txt\necho via ${SSH_CONNECTION%% *}", "--", acptermBin, "agent")
	r := acpterm(t, opts{}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	evs := parseEvents(t, r.stdout)
	created := ofKind(evs, "terminal_created")
	if len(created) != 2 {
		t.Fatalf("%d terminals created, want 2:\n%s", len(created), r.stdout)
	}
	for _, c := range created {
		if c.str("cwd") != dir || c.str("where") != "ssh://"+sshtest.Host || c.str("command") != "sh" {
			t.Errorf("terminal_created cwd %q where %q command %q, want the target's %q, %q and sh",
				c.str("cwd"), c.str("where"), c.str("command"), dir, "ssh://"+sshtest.Host)
		}
	}
	var out strings.Builder
	for _, o := range ofKind(evs, "terminal_output") {
		out.WriteString(o.str("data"))
	}
	mustContain(t, "the terminals' output", out.String(), "only on the target\n", "via 127.0.0.1\n")
}

// TestRemoteSSHText: the text output says where each command ran.
func TestRemoteSSHText(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	args := append([]string{"run", "--approve-all"}, remoteArgs(t, s, targetDir(t))...)
	args = append(args, "-p", "cat marker.txt", "--", acptermBin, "agent")
	r := acpterm(t, opts{}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "✓ cat marker.txt [execute]\n  │ only on the target\n  └ exit 0 · ", " · on ssh://target · sandbox: workspace-write\n")
}

// TestRemoteSSHUnreachable: a target that does not answer fails the run
// before the agent starts, with ssh's own words.
func TestRemoteSSHUnreachable(t *testing.T) {
	t.Parallel()
	started := filepath.Join(t.TempDir(), "started")
	for _, copyFirst := range []bool{false, true} {
		args := []string{"run", "--approve-all", "--remote", "ssh://127.0.0.1:1/tmp", "--remote-tool-arg=-oBatchMode=yes"}
		if !copyFirst {
			args = append(args, "--remote-binary", "/usr/bin/acpterm")
		}
		args = append(args, "-p", "true", "--", "/bin/sh", "-c", "touch "+started)
		r := acpterm(t, opts{plain: true}, args...)
		if r.code != 1 {
			t.Errorf("copy %v: exit %d, want 1\nstderr:\n%s", copyFirst, r.code, r.stderr)
		}
		mustContain(t, "stderr", r.stderr, "acpterm: --remote ssh://127.0.0.1:1/tmp: ", "Connection refused")
		if r.stdout != "" {
			t.Errorf("copy %v: stdout %q", copyFirst, r.stdout)
		}
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("the agent was started for an unreachable target")
	}
}

// TestRemoteSSHKilled: kill -9 of acpterm, and two Ctrl-Cs, in the middle
// of a command on the target leave nothing of it running there within 2 s.
func TestRemoteSSHKilled(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	for _, how := range []string{"SIGKILL", "2×SIGINT"} {
		t.Run(how, func(t *testing.T) {
			mark := newMark(t)
			// A command that ignores SIGTERM, with a setsid descendant.
			line := remoteMarkVar + "=" + mark + " sh -c 'trap \"\" TERM; setsid sleep 101 & sleep 102; wait'"
			args := append([]string{"run", "--approve-all", "--sandbox", "off"}, remoteArgs(t, s, targetDir(t))...)
			args = append(args, "-p", line, "--", acptermBin, "agent")
			cmd := exec.Command(acptermBin, args...)
			cmd.Dir = t.TempDir()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(30 * time.Second)
			for len(sshtest.Running(remoteMarkVar, mark)) < 3 {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("the command did not start on the target within 30 s\nstderr:\n%s", &stderr)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if how == "SIGKILL" {
				_ = cmd.Process.Kill()
			} else {
				// The second interrupt kills the agent and its commands;
				// the first cancels the turn, which the built-in agent
				// answers by killing its terminal, and that the command
				// ignores.
				_ = cmd.Process.Signal(syscall.SIGINT)
				_ = cmd.Process.Signal(syscall.SIGINT)
			}
			start := time.Now()
			if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
				t.Errorf("2 s after %s of acpterm, still running on the target: %v", how, left)
			} else {
				t.Logf("nothing left on the target %v after %s", time.Since(start).Round(time.Millisecond), how)
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Errorf("acpterm still running 20 s after %s", how)
			}
			checkNoRace(t, stderr.String())
		})
	}
}

// TestRemoteSSHSandboxRefused: a target whose kernel cannot deny the
// network (no user namespaces there) refuses --network deny, in the exec
// server's words, before the agent starts; with the network allowed the
// same target runs the commands, and names what it does without.
func TestRemoteSSHSandboxRefused(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	if os.Geteuid() != 0 {
		t.Skip("the limited target is made as root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	// acpterm on the target, started in a user namespace of its own in
	// which no further one can be made (as on stock Ubuntu 24.04).
	// Its home holds no secret to hide until the end.
	limited, home := filepath.Join(t.TempDir(), "acpterm-limited"), t.TempDir()
	script := "#!/bin/sh\nHOME=" + home + " exec unshare --user --map-root-user /bin/sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"' " +
		plainAcpterm(t) + " \"$@\"\n"
	if err := os.WriteFile(limited, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := targetDir(t)
	started := filepath.Join(t.TempDir(), "started")
	base := []string{"run", "--approve-all", "--remote", "ssh://" + sshtest.Host + dir, "--remote-tool-arg=-F" + s.Config, "--remote-binary", limited}

	r := acpterm(t, opts{plain: true}, append(base, "--network", "deny", "-p", "true", "--", "/bin/sh", "-c", "touch "+started)...)
	if r.code != 1 {
		t.Errorf("--network deny: exit %d, want 1\nstderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "the sandbox cannot be set up there: ", "network")
	if _, err := os.Stat(started); err == nil {
		t.Error("the agent was started though the target refused the sandbox")
	}

	r = acpterm(t, opts{plain: true}, append(base, "-p", "cat marker.txt", "--", acptermBin, "agent")...)
	if r.code != 0 {
		t.Fatalf("--network allow: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "only on the target")
	mustContain(t, "stderr", r.stderr, "acpterm: sandbox: ", "missing: no mount namespace")

	// acpterm sandbox --remote says as much of the same target.
	r = acpterm(t, opts{plain: true}, "sandbox", "--remote", "ssh://"+sshtest.Host+dir, "--remote-tool-arg=-F"+s.Config, "--remote-binary", limited)
	if r.code != 0 {
		t.Fatalf("sandbox --remote: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, "acpterm sandbox --remote", r.stdout, "\nnamespaces: not available: ",
		"\nread-only, network allow: enforced there, landlock abi ", "\nread-only, network deny: refused there: ",
		"\nworkspace-write, network deny: refused there: ")

	// Secrets there, which Landlock hides without a mount namespace: the
	// run goes ahead, says so, and its commands read neither the key nor
	// ~/.netrc; --readable lets one through.
	netrc, key := filepath.Join(home, ".netrc"), filepath.Join(home, ".ssh", "id_x")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{netrc, key} {
		if err := os.WriteFile(f, []byte("SECRET-"+filepath.Base(f)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	prompt := "cat " + key + "\ncat " + netrc + "\ncat marker.txt"
	r = acpterm(t, opts{plain: true}, append(base, "-p", prompt, "--", acptermBin, "agent", "--keep-going")...)
	if r.code != 0 {
		t.Fatalf("secrets hidden by Landlock: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "SECRET-") {
		t.Errorf("a secret was read on the target:\n%s", r.stdout)
	}
	mustContain(t, "stdout", r.stdout, "only on the target", "Permission denied")
	mustContain(t, "stderr", r.stderr, "secret paths hidden by Landlock")
	r = acpterm(t, opts{plain: true}, append(base, "--readable", netrc, "-p", "cat "+netrc, "--", acptermBin, "agent")...)
	if r.code != 0 || !strings.Contains(r.stdout, "SECRET-.netrc") {
		t.Errorf("--readable %s: exit %d\nstdout:\n%s\nstderr:\n%s", netrc, r.code, r.stdout, r.stderr)
	}
}

// TestRemoteSSHAgentClinging: a --remote-agent agent that outlives the end
// of its stdin, ignores SIGTERM and leaves a setsid daemon is ended on the
// target, daemon included, by the agent host's dead-man rule once acpterm
// has ended (two graces of 2 s).
func TestRemoteSSHAgentClinging(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	mark := newMark(t)
	args := append([]string{"run", "--approve-all", "--remote-agent"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "where", "--", "env", fakeAgentEnv+"=remote-clinging", remoteMarkVar+"="+mark, testExe(t))
	r := acpterm(t, opts{}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "cwd="+dir+"\n")
	ended := time.Now()
	if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 8*time.Second); len(left) > 0 {
		t.Errorf("8 s after acpterm ended, the agent or its daemon still runs on the target: %v", left)
	} else {
		t.Logf("the agent and its daemon gone %v after acpterm ended", time.Since(ended).Round(time.Millisecond))
	}
}

// TestRemoteSSHSessionCwd: the agent is given the target's directory as
// the session's cwd, while it runs here, in the directory acpterm runs in.
func TestRemoteSSHSessionCwd(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	args := append([]string{"run", "--approve-all"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "where", "--", testExe(t))
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=remote-session"}}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "cwd="+dir+"\n")
}

// TestRemoteSSHFS: the agent's fs/* land on the target, in its
// directory, with the sandbox's .git rule enforced there.
func TestRemoteSSHFS(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	gitConfig := filepath.Join(dir, ".git", "config")
	if err := os.MkdirAll(filepath.Dir(gitConfig), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gitConfig, []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--approve-all"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "fs", "--", testExe(t))
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=remote-session"}}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "read=only on the target\n", "git=permission denied: ", "not written")
	if b, err := os.ReadFile(filepath.Join(dir, "from-agent.txt")); err != nil || string(b) != "written through fs\n" {
		t.Errorf("from-agent.txt on the target: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(gitConfig); string(b) != "[core]\n" {
		t.Errorf(".git/config is %q: the write was let through", b)
	}
}

// TestRemoteSSHSandboxReport: acpterm sandbox --remote says what the
// target's kernel and user can enforce in the words of the local report,
// which for this target, this machine, it must match line for line; and
// for each setting whether the target enforces it, as the local report
// does for here.
func TestRemoteSSHSandboxReport(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	local := acpterm(t, opts{plain: true, dir: dir}, "sandbox")
	args := append([]string{"sandbox"}, remoteArgs(t, s, dir)...)
	r := acpterm(t, opts{plain: true}, args...)
	if local.code != 0 || r.code != 0 {
		t.Fatalf("exit %d here, %d there\nstderr:\n%s%s", local.code, r.code, local.stderr, r.stderr)
	}
	here := strings.Split(strings.TrimSuffix(local.stdout, "\n"), "\n")
	there := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(there) != len(here)+1 || !strings.HasPrefix(there[0], "target: ssh://"+sshtest.Host+dir+" (linux/") {
		t.Fatalf("the report there:\n%s\nhere:\n%s", r.stdout, local.stdout)
	}
	for i, h := range here {
		got := there[i+1]
		// The kernel and user lines, and those on the secrets hidden
		// (the same home there), say the same.
		if i < 3 || !strings.Contains(h, ", network ") {
			if got != h {
				t.Errorf("line %d: there %q, here %q", i+2, got, h)
			}
			continue
		}
		setting, rest, _ := strings.Cut(h, ": ")
		gotSetting, gotRest, _ := strings.Cut(got, ": ")
		enforced := !strings.Contains(rest, "not supported")
		if gotSetting != setting || enforced != strings.HasPrefix(gotRest, "enforced there") ||
			strings.Contains(rest, "missing:") != strings.Contains(gotRest, "missing:") {
			t.Errorf("there %q, here %q", got, h)
		}
	}
}

// TestRemoteSSHProbe: the conformance probe, run under acpterm run
// --remote, finds every normative case passing on the target, and its
// commands ran in the target's directory.
func TestRemoteSSHProbe(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	report := filepath.Join(t.TempDir(), "probe.json")
	args := append([]string{"run", "--approve-all"}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "go", "--", plainAcpterm(t), "probe", "--json", report)
	r := acpterm(t, opts{plain: true}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
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
	if len(rep.Cases) != len(probe.Cases()) || rep.Summary.Fail != 0 || rep.Summary.Skip != 0 {
		t.Errorf("%d cases of %d, summary %+v", len(rep.Cases), len(probe.Cases()), rep.Summary)
	}
	for _, c := range rep.Cases {
		if c.Normative && c.Result != probe.ResultPass {
			t.Errorf("normative case %s: %s: %s", c.ID, c.Result, c.Observed)
		}
		if c.ID == "cwd-default" && !strings.Contains(c.Observed, `"`+dir+`"`) {
			t.Errorf("cwd-default: %s; want the target's %s", c.Observed, dir)
		}
	}
}

// TestRemoteSSHCopies: without --remote-binary, acpterm copies itself to
// the target once, says so, and finds the copy the next time.
func TestRemoteSSHCopies(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	keep := filepath.Join(t.TempDir(), "copies")
	args := []string{"run", "--approve-all", "--remote", "ssh://" + sshtest.Host + dir, "--remote-tool-arg=-F" + s.Config,
		"--remote-install-dir", keep, "-p", "cat marker.txt", "--", acptermBin, "agent"}
	for i, wantCopy := range []bool{true, false} {
		r := acpterm(t, opts{}, args...)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, r.code, r.stdout, r.stderr)
		}
		mustContain(t, "stdout", r.stdout, "only on the target")
		if copied := strings.Contains(r.stderr, "acpterm: copied "+acptermBin+" "); copied != wantCopy {
			t.Errorf("run %d: copied %v, want %v\nstderr:\n%s", i+1, copied, wantCopy, r.stderr)
		}
	}
	copies, _ := filepath.Glob(filepath.Join(keep, "*", "acpterm"))
	if len(copies) != 1 {
		t.Errorf("copies on the target: %v, want one", copies)
	}
}

// TestRemoteSSHAgent: with --remote-agent the agent itself runs on the
// target, through ssh, and what it runs itself runs there; it is gone
// from the target once acpterm has ended.
func TestRemoteSSHAgent(t *testing.T) {
	t.Parallel()
	s := needSSHD(t)
	dir := targetDir(t)
	mark := newMark(t)
	args := append([]string{"run", "--approve-all", "--remote-agent"}, remoteArgs(t, s, dir)...)
	// ssh passes no environment: the agent's is set on its command line.
	args = append(args, "-p", "where", "--", "env", fakeAgentEnv+"=remote-where", remoteMarkVar+"="+mark, testExe(t))
	r := acpterm(t, opts{}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "cwd="+dir+"\n", fmt.Sprintf(`agent via port "%d" read "only on the target\n" (<nil>)`, s.Port))
	if left := sshtest.WaitNoneRunning(remoteMarkVar, mark, 2*time.Second); len(left) > 0 {
		t.Errorf("2 s after acpterm ended, the agent still runs on the target: %v", left)
	}
}
