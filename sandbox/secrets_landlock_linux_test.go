package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// withoutNamespaces makes Wrap and NewSpawner find no user namespaces,
// for the rest of the test: what they do on a machine that forbids them.
// The test must not be parallel.
func withoutNamespaces(t testing.TB) {
	t.Helper()
	saved := namespaceProbe
	namespaceProbe = func() error { return errors.New("user namespaces are disabled") }
	t.Cleanup(func() { namespaceProbe = saved })
}

// landlockSecretPolicy is secretPolicy for a machine without a mount
// namespace.
func landlockSecretPolicy(home string, mode Mode, writable ...string) *Policy {
	p := secretPolicy(home, mode, writable...)
	p.WithoutMountNamespace = true
	return p
}

// TestSecretsLandlock: without a mount namespace, a command reads none of
// the secrets, reads what is shown through a hidden directory, the
// siblings of the hidden paths and everything else, runs programs, and
// writes where it could before.
func TestSecretsLandlock(t *testing.T) { both(t, testSecretsLandlock) }

func testSecretsLandlock(t *testing.T, b box) {
	need(t, false)
	withoutNamespaces(t)
	home, kube := secretHome(t)
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("PUBLIC-notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	for name, p := range map[string]*Policy{
		"read-only":       landlockSecretPolicy(home, ReadOnly),
		"workspace-write": landlockSecretPolicy(home, WorkspaceWrite, ws),
		"home-write":      landlockSecretPolicy(home, WorkspaceWrite, home),
	} {
		t.Run(name, func(t *testing.T) {
			var paths []string
			for _, n := range []string{".ssh/id_ed25519", ".ssh/id_work", ".aws/credentials", ".config/gcloud/credentials.db",
				".docker/config.json", ".netrc", ".git-credentials", ".gnupg/private-keys-v1.d/k.key", ".codex/auth.json",
				".gemini/oauth_creds.json", ".local/share/opencode/auth.json", ".mozilla/firefox/p/cookies", ".kube/config",
				".npmrc", ".ssh/known_hosts", ".ssh/config", ".ssh/id_ed25519.pub", ".docker/other.json", ".codex/config.toml",
				"notes.txt"} {
				paths = append(paths, filepath.Join(home, n))
			}
			paths = append(paths, filepath.Join(kube, "config"), "/usr/bin/env",
				// Through /proc: the command's own root, and the test
				// process's.
				"/proc/self/root"+filepath.Join(home, ".aws/credentials"),
				"/proc/"+strconv.Itoa(os.Getpid())+"/root"+filepath.Join(home, ".netrc"))
			script := readAll + `
ls -A ` + home + `/.ssh | while read -r n; do cat ` + home + `/.ssh/"$n" 2>/dev/null | grep -q SECRET && echo "READ-LISTED($n)"; done
ls ` + home + `/.ssh | grep -q '^id_ed25519$' && echo LISTED
/usr/bin/env true && echo RAN`
			out, code := b.sh(t, p, ws, script, paths...)
			if code != 0 {
				t.Fatalf("status %d\n%s", code, out)
			}
			if strings.Contains(out, "SECRET-") || strings.Contains(out, "READ-LISTED") {
				t.Errorf("a secret was read:\n%s", out)
			}
			for _, want := range []string{"PUBLIC-known-hosts", "PUBLIC-ssh-config", "PUBLIC-ssh-pub", "PUBLIC-docker-other",
				"PUBLIC-codex-config", "PUBLIC-notes", "LISTED", "RAN"} {
				if !strings.Contains(out, want) {
					t.Errorf("%q missing: not readable, or did not run:\n%s", want, out)
				}
			}
			if strings.Contains(out, "FAILED(/usr/bin/env)") {
				t.Errorf("/usr/bin/env is not readable:\n%s", out)
			}
			// The .npmrc is hidden whole: no redacted copy without a
			// mount namespace.
			if !strings.Contains(out, "FAILED("+filepath.Join(home, ".npmrc")+")") {
				t.Errorf("~/.npmrc was readable:\n%s", out)
			}
		})
	}
}

// TestSecretsLandlockWrites: writes are what they were without a mount
// namespace: the workspace is writable, the rest is not.
func TestSecretsLandlockWrites(t *testing.T) { both(t, testSecretsLandlockWrites) }

func testSecretsLandlockWrites(t *testing.T, b box) {
	need(t, false)
	withoutNamespaces(t)
	home, _ := secretHome(t)
	ws := t.TempDir()
	script := `echo x > ` + ws + `/new && cat ` + ws + `/new >/dev/null && echo WS-OK
(echo x > ` + home + `/planted) 2>/dev/null && echo HOME-WRITTEN
(echo x >> ` + home + `/.ssh/known_hosts) 2>/dev/null && echo SSH-WRITTEN
exit 0`
	out, code := b.sh(t, landlockSecretPolicy(home, WorkspaceWrite, ws), ws, script)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, out)
	}
	if strings.TrimSpace(out) != "WS-OK" {
		t.Errorf("got %q, want only WS-OK", out)
	}
	mustNotExist(t, filepath.Join(home, "planted"))
}

// TestSecretsLandlockAttacks: a command that may write the home directory
// tries to get at a hidden file by renaming, linking, a symlink, a
// directory renamed away and put back, and /proc. Landlock's rules stay
// with the inodes, and a rename or link that would let a hidden file be
// read fails.
func TestSecretsLandlockAttacks(t *testing.T) {
	need(t, false)
	withoutNamespaces(t)
	home, _ := secretHome(t)
	sub := filepath.Join(home, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	// A hard link the user made before the run, beside the hidden file:
	// the same inode, so hidden with it.
	if err := os.Link(filepath.Join(home, ".netrc"), filepath.Join(home, "netrc-old")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh/known_hosts2"), []byte("PUBLIC-known-hosts2"), 0o600); err != nil {
		t.Fatal(err)
	}
	ssh := filepath.Join(home, ".ssh")
	script := `cd ` + home + `
mv .ssh/id_ed25519 sub/moved 2>/dev/null && echo MOVED-INTO-READABLE
ln .ssh/id_work sub/linked 2>/dev/null && echo LINKED-INTO-READABLE
ln .netrc sub/netrc 2>/dev/null && echo LINKED-FILE-INTO-READABLE
ln -s ` + ssh + `/id_ed25519 sub/symlink && echo SYMLINKED
ln -s ` + ssh + ` sshlink && echo SYMLINKED-DIR
mv .ssh sub/ssh 2>/dev/null && echo MOVED-DIR-INTO-READABLE
mv .ssh ssh-away && mkdir .ssh && echo RENAMED-AWAY
mv sub .ssh-new && echo RENAMED-READABLE
cat sub/moved sub/linked sub/netrc sub/symlink sshlink/id_ed25519 sub/ssh/id_ed25519 ssh-away/id_ed25519 ssh-away/id_work \
  .ssh-new/symlink /proc/self/root` + home + `/ssh-away/id_work /proc/1/root` + ssh + `/id_ed25519 /proc/` + strconv.Itoa(os.Getpid()) + `/root` + home + `/.netrc 2>/dev/null
cat netrc-old 2>/dev/null
(cd ssh-away && cat id_work) 2>/dev/null
mv ssh-away/id_work ssh-away/known_hosts2 && cat ssh-away/known_hosts2 2>/dev/null
cat ssh-away/known_hosts
exit 0`
	out, code := box{}.sh(t, landlockSecretPolicy(home, WorkspaceWrite, home), home, script)
	if code != 0 {
		t.Fatalf("status %d\n%s", code, out)
	}
	if strings.Contains(out, "SECRET-") || strings.Contains(out, "INTO-READABLE") {
		t.Errorf("an attempt on the hidden paths succeeded:\n%s", out)
	}
	// The symlinks and the rename could be made (the home is writable),
	// and what the shown known_hosts is still is readable under its new
	// name: its rule went with it.
	for _, want := range []string{"SYMLINKED\n", "SYMLINKED-DIR", "RENAMED-AWAY", "RENAMED-READABLE", "PUBLIC-known-hosts"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
}

// BenchmarkStartLandlock runs `sh -c true` directly, through the helper
// without a mount namespace, and the same with the secrets of a home
// hidden by Landlock, alternately in the same loop, and reports
// milliseconds per run of each (wall time, and the process's own CPU
// time): what listing the directories on the way to the secrets and
// adding a rule per entry costs a start. The cost grows with the entries
// of those directories: "tmp" is secretHome, below the shared /tmp (and
// ~/.kube a link to another directory there); "var-tmp" a home of a few
// secrets below /var/tmp, falling back to /tmp where it cannot be made.
func BenchmarkStartLandlock(b *testing.B) {
	need(b, false)
	withoutNamespaces(b)
	tmpHome, _ := secretHome(b)
	b.Run("tmp", func(b *testing.B) { benchStartLandlock(b, tmpHome) })
	b.Run("var-tmp", func(b *testing.B) { benchStartLandlock(b, smallHome(b)) })
}

// smallHome makes a home below /var/tmp holding ~/.ssh with a key and
// known_hosts, ~/.aws, ~/.netrc, an .npmrc with a token and a file.
func smallHome(b *testing.B) string {
	home, err := os.MkdirTemp("/var/tmp", "acpterm-home-")
	if err != nil {
		home = b.TempDir()
	} else {
		b.Cleanup(func() { os.RemoveAll(home) })
	}
	for name, content := range map[string]string{".ssh/id_ed25519": "SECRET", ".ssh/known_hosts": "x", ".aws/credentials": "SECRET",
		".netrc": "SECRET", ".npmrc": "_authToken=SECRET\n", "notes": "x"} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return home
}

func benchStartLandlock(b *testing.B, home string) {
	plain := Policy{Mode: ReadOnly, WithoutMountNamespace: true, TempDir: b.TempDir()}
	hiding := plain
	DefaultSecrets(home).Apply(&hiding)
	var wall, cpu [3]time.Duration
	for b.Loop() {
		for i, p := range []*Policy{nil, &plain, &hiding} {
			cmd := exec.Command("/bin/sh", "-c", "true")
			var a *Applied
			t0 := time.Now()
			if p != nil {
				var err error
				if a, err = p.Wrap(cmd); err != nil {
					b.Fatal(err)
				}
			}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			wall[i] += time.Since(t0)
			cpu[i] += cpuTime(cmd)
			if a != nil {
				if err := a.Cleanup(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	for i, name := range []string{"direct", "landlock", "landlock+secrets"} {
		b.ReportMetric(ms(wall[i]), name+"-ms/op")
		b.ReportMetric(ms(cpu[i]), name+"-cpu-ms/op")
	}
}
