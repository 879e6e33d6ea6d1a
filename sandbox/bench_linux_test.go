package sandbox

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStart runs `sh -c true` directly and through the helper,
// alternately in the same loop so that both see the same machine load, and
// reports milliseconds per run for each and their difference (the
// sandboxed run includes its Cleanup, also reported alone): wall time,
// and the CPU time of the process itself (which a loaded machine inflates
// less; kernel work done in the parent's clone, such as creating the
// namespaces, is not in it). The helper here is the test binary; the
// acpterm binary differs in size and init.
func BenchmarkStart(b *testing.B) {
	need(b, true)
	root := b.TempDir()
	home, _ := secretHome(b) // 12 hidden paths that exist, one shown, one redacted
	secrets := DefaultSecrets(home)
	for _, bc := range []struct {
		name string
		p    Policy
		held bool // another sandbox of the session holds the placeholders
	}{
		{"read-only", Policy{Mode: ReadOnly}, false},
		{"read-only+secrets", Policy{Mode: ReadOnly, Hidden: secrets.Hidden, Readable: secrets.Readable, Redacted: secrets.Redacted}, false},
		{"read-only+deny", Policy{Mode: ReadOnly, Network: DenyNetwork}, false},
		// The listener opened in the namespace and handed out, and a proxy
		// started and stopped per command.
		{"read-only+proxy", Policy{Mode: ReadOnly, Network: ProxyNetwork, AllowHosts: []string{"example.com"}}, false},
		{"workspace-write+git+deny", Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}}, false},
		// As a run's: its roots' protected files, all missing here, so
		// that each start makes, mounts and removes every placeholder.
		{"workspace-write+git+deny+protect", Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root},
			Protected: DefaultProtected(root)}, false},
		// As in a run, where the agent's sandbox or the session's spawner
		// holds them: each start shares them.
		{"workspace-write+git+deny+protect-held", Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root},
			Protected: DefaultProtected(root)}, true},
		{"workspace-write+git+deny+protect-held+secrets", Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root},
			Protected: DefaultProtected(root), Hidden: secrets.Hidden, Readable: secrets.Readable, Redacted: secrets.Redacted}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.p.Mode == WorkspaceWrite {
				workspaceGit(b, root)
			}
			tmp := b.TempDir()
			bc.p.TempDir = tmp // what a session would do: one TMPDIR, made once
			if bc.held {
				a, err := bc.p.Wrap(exec.Command("/bin/true"))
				if err != nil {
					b.Fatal(err)
				}
				defer a.Cleanup()
			}
			var direct, boxed, wrapT, cleanup, directCPU, boxedCPU time.Duration
			for b.Loop() {
				t0 := time.Now()
				plain := exec.Command("/bin/sh", "-c", "true")
				if err := plain.Run(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				cmd := exec.Command("/bin/sh", "-c", "true")
				tw := time.Now()
				a, err := bc.p.Wrap(cmd)
				if err != nil {
					b.Fatal(err)
				}
				wrapT += time.Since(tw)
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if err := a.Cleanup(); err != nil {
					b.Fatal(err)
				}
				direct += t1.Sub(t0)
				boxed += time.Since(t1)
				cleanup += time.Since(t2)
				directCPU += cpuTime(plain)
				boxedCPU += cpuTime(cmd)
			}
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
			b.ReportMetric(ms(direct), "direct-ms/op")
			b.ReportMetric(ms(boxed), "sandboxed-ms/op")
			b.ReportMetric(ms(boxed-direct), "extra-ms/op")
			// Of the sandboxed time, what Wrap took before the start:
			// making the placeholders no one holds yet.
			b.ReportMetric(ms(wrapT), "wrap-ms/op")
			// Of the sandboxed time, what Cleanup took after the command
			// ended: removing the placeholders no one else holds.
			b.ReportMetric(ms(cleanup), "cleanup-ms/op")
			b.ReportMetric(ms(directCPU), "direct-cpu-ms/op")
			b.ReportMetric(ms(boxedCPU), "sandboxed-cpu-ms/op")
		})
	}
}

func cpuTime(c *exec.Cmd) time.Duration {
	return c.ProcessState.UserTime() + c.ProcessState.SystemTime()
}

func workspaceGit(b *testing.B, root string) {
	b.Helper()
	if err := exec.Command("mkdir", "-p", root+"/.git/hooks").Run(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSpawner runs `sh -c true` directly and through a Spawner,
// alternately, and reports milliseconds per run for each and their
// difference: what a sandboxed command costs once the helper is up. With
// secrets, the spawner hides them once, at its start: its commands should
// cost what they cost without.
func BenchmarkSpawner(b *testing.B) {
	need(b, true)
	root := b.TempDir()
	workspaceGit(b, root)
	home, _ := secretHome(b)
	secrets := DefaultSecrets(home)
	for _, bc := range []struct {
		name string
		p    Policy
	}{
		{"workspace-write+deny", Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root}}},
		{"workspace-write+deny+secrets", Policy{Mode: WorkspaceWrite, Network: DenyNetwork, Writable: []string{root},
			Hidden: secrets.Hidden, Readable: secrets.Readable, Redacted: secrets.Redacted}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchSpawner(b, &bc.p) })
	}
}

func benchSpawner(b *testing.B, p *Policy) {
	s, err := p.NewSpawner()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var direct, boxed time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		c, err := s.Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "true"}, Setpgid: true, Pdeathsig: syscall.SIGKILL})
		if err != nil {
			b.Fatal(err)
		}
		if st, err := c.Wait(); err != nil || st != (ExitStatus{}) {
			b.Fatal(st, err)
		}
		if err := c.Release(); err != nil {
			b.Fatal(err)
		}
		direct += t1.Sub(t0)
		boxed += time.Since(t1)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(direct), "direct-ms/op")
	b.ReportMetric(ms(boxed), "spawned-ms/op")
	b.ReportMetric(ms(boxed-direct), "extra-ms/op")
}

// BenchmarkPlaceholders makes and removes the placeholders of a
// workspace's missing protected names (16, as DefaultProtected gives for
// a repository), as a sandbox that finds none held does at its start and
// its end, and reports each part: microseconds to make them all, and to
// remove them all.
func BenchmarkPlaceholders(b *testing.B) {
	root := b.TempDir()
	workspaceGit(b, root)
	paths := DefaultProtected(root)
	var made, removed time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, _, lost := reserve(paths)
		t1 := time.Now()
		if len(lost) > 0 {
			b.Fatal(lost)
		}
		r.release()
		made += t1.Sub(t0)
		removed += time.Since(t1)
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(b.N) }
	b.ReportMetric(us(made), "make-us/op")
	b.ReportMetric(us(removed), "remove-us/op")
	b.ReportMetric(float64(len(paths)), "protected-paths")
}
