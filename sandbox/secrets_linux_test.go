package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// secretHome makes a home directory holding the secrets DefaultSecrets
// lists (each file's content names it, "SECRET-…"), the files of ~/.ssh
// that stay readable ("PUBLIC-…"), an .npmrc with tokens, and ~/.kube as
// a symlink to a directory outside the home. It returns the home and the
// kube directory the link leads to.
func secretHome(t testing.TB) (home, kube string) {
	t.Helper()
	home, kube = t.TempDir(), t.TempDir()
	files := map[string]string{
		".ssh/id_ed25519":                 "SECRET-ssh-key",
		".ssh/id_work":                    "SECRET-ssh-work",
		".ssh/known_hosts":                "PUBLIC-known-hosts",
		".ssh/config":                     "PUBLIC-ssh-config",
		".ssh/id_ed25519.pub":             "PUBLIC-ssh-pub",
		".aws/credentials":                "SECRET-aws",
		".config/gcloud/credentials.db":   "SECRET-gcloud",
		".docker/config.json":             "SECRET-docker",
		".docker/other.json":              "PUBLIC-docker-other",
		".netrc":                          "SECRET-netrc",
		".git-credentials":                "SECRET-git",
		".gnupg/private-keys-v1.d/k.key":  "SECRET-gpg",
		".codex/auth.json":                "SECRET-codex",
		".codex/config.toml":              "PUBLIC-codex-config",
		".gemini/oauth_creds.json":        "SECRET-gemini",
		".local/share/opencode/auth.json": "SECRET-opencode",
		".mozilla/firefox/p/cookies":      "SECRET-firefox",
		".npmrc":                          "registry=https://npm.example.com/\n//npm.example.com/:_authToken=SECRET-npm-token\n_auth = SECRET-npm-auth\ncolor=false\n",
	}
	for name, content := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(kube, "config"), []byte("SECRET-kube"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kube, filepath.Join(home, ".kube")); err != nil {
		t.Fatal(err)
	}
	return home, kube
}

// readAll is a script that prints each of its arguments' content, or
// FAILED(path) when it cannot be read.
const readAll = `for f in "$@"; do if c=$(cat "$f" 2>/dev/null); then echo "$c"; else echo "FAILED($f)"; fi; done`

func secretPolicy(home string, mode Mode, writable ...string) *Policy {
	p := &Policy{Mode: mode, Writable: writable}
	DefaultSecrets(home).Apply(p)
	return p
}

func TestSecretsHidden(t *testing.T) { both(t, testSecretsHidden) }

func testSecretsHidden(t *testing.T, b box) {
	need(t, true)
	t.Parallel()
	home, kube := secretHome(t)
	ws := t.TempDir()
	for name, p := range map[string]*Policy{
		"read-only":       secretPolicy(home, ReadOnly),
		"workspace-write": secretPolicy(home, WorkspaceWrite, ws),
		// The workspace is the home directory: its secrets stay hidden.
		"home-write": secretPolicy(home, WorkspaceWrite, home),
	} {
		t.Run(name, func(t *testing.T) {
			paths := []string{}
			for _, n := range []string{".ssh/id_ed25519", ".ssh/id_work", ".aws/credentials", ".config/gcloud/credentials.db",
				".docker/config.json", ".netrc", ".git-credentials", ".gnupg/private-keys-v1.d/k.key", ".codex/auth.json",
				".gemini/oauth_creds.json", ".local/share/opencode/auth.json", ".mozilla/firefox/p/cookies", ".kube/config",
				".ssh/known_hosts", ".ssh/config", ".ssh/id_ed25519.pub", ".docker/other.json", ".codex/config.toml", ".npmrc"} {
				paths = append(paths, filepath.Join(home, n))
			}
			paths = append(paths, filepath.Join(kube, "config"))
			// Through the host's view of the file system: the test
			// process's root, which the command may not look into.
			paths = append(paths, "/proc/"+strconv.Itoa(os.Getpid())+"/root"+filepath.Join(home, ".aws/credentials"))
			out, code := b.sh(t, p, ws, readAll, paths...)
			if code != 0 {
				t.Fatalf("status %d\n%s", code, out)
			}
			if strings.Contains(out, "SECRET-") {
				t.Errorf("a secret was read:\n%s", out)
			}
			for _, want := range []string{"PUBLIC-known-hosts", "PUBLIC-ssh-config", "PUBLIC-ssh-pub", "PUBLIC-docker-other",
				"PUBLIC-codex-config", "registry=https://npm.example.com/\ncolor=false"} {
				if !strings.Contains(out, want) {
					t.Errorf("%q is not readable:\n%s", want, out)
				}
			}
			// A hidden directory's content is gone (ENOENT), and a hidden
			// file cannot be opened (ENXIO): not just empty.
			for _, n := range []string{".aws/credentials", ".netrc", ".codex/auth.json", ".docker/config.json"} {
				if !strings.Contains(out, "FAILED("+filepath.Join(home, n)+")") {
					t.Errorf("reading ~/%s did not fail:\n%s", n, out)
				}
			}
		})
	}
}

func TestSecretsApplied(t *testing.T) {
	need(t, true)
	t.Parallel()
	home, kube := secretHome(t)
	a := wrap(t, secretPolicy(home, ReadOnly), newPlanCmdForTest())
	for _, want := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".aws"), kube, filepath.Join(home, ".codex/auth.json")} {
		if !slices.Contains(a.Hidden, want) {
			t.Errorf("Applied.Hidden lacks %s: %v", want, a.Hidden)
		}
	}
	if !slices.Contains(a.Shown, filepath.Join(home, ".ssh/known_hosts")) {
		t.Errorf("Applied.Shown lacks known_hosts: %v", a.Shown)
	}
	if want := []string{filepath.Join(home, ".npmrc")}; !slices.Equal(a.Redacted, want) {
		t.Errorf("Applied.Redacted = %v, want %v", a.Redacted, want)
	}
	if strings.Contains(strings.Join(a.Hidden, " "), ".azure") {
		t.Errorf("a path that does not exist was hidden: %v", a.Hidden)
	}
	if !strings.Contains(a.String(), "hidden ") {
		t.Errorf("String() does not say what is hidden: %s", a)
	}
}

func TestSecretsReadable(t *testing.T) { both(t, testSecretsReadable) }

func testSecretsReadable(t *testing.T, b box) {
	need(t, true)
	t.Parallel()
	home, _ := secretHome(t)
	p := secretPolicy(home, ReadOnly)
	// A hidden directory as a whole, a file inside another, and the
	// .npmrc: each readable again, and nothing else.
	p.Readable = append(p.Readable, filepath.Join(home, ".aws"), filepath.Join(home, ".ssh/id_work"), filepath.Join(home, ".npmrc"))
	out, code := b.sh(t, p, home, readAll, filepath.Join(home, ".aws/credentials"), filepath.Join(home, ".ssh/id_work"),
		filepath.Join(home, ".ssh/id_ed25519"), filepath.Join(home, ".netrc"), filepath.Join(home, ".npmrc"))
	if code != 0 {
		t.Fatalf("status %d\n%s", code, out)
	}
	for _, want := range []string{"SECRET-aws", "SECRET-ssh-work", "SECRET-npm-token"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s not readable again:\n%s", want, out)
		}
	}
	for _, not := range []string{"SECRET-ssh-key", "SECRET-netrc"} {
		if strings.Contains(out, not) {
			t.Errorf("%s readable:\n%s", not, out)
		}
	}
}

// TestSecretsWritableInside: a workspace inside a hidden directory is
// shown through it, writable; its siblings stay hidden.
func TestSecretsWritableInside(t *testing.T) { both(t, testSecretsWritableInside) }

func testSecretsWritableInside(t *testing.T, b box) {
	need(t, true)
	t.Parallel()
	home, _ := secretHome(t)
	ws := filepath.Join(home, ".aws/project")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	p := secretPolicy(home, WorkspaceWrite, ws)
	out, code := b.sh(t, p, ws, `echo made > made && `+readAll, filepath.Join(ws, "made"), filepath.Join(home, ".aws/credentials"))
	if code != 0 {
		t.Fatalf("status %d\n%s", code, out)
	}
	if !strings.Contains(out, "made") || strings.Contains(out, "SECRET-aws") {
		t.Errorf("want the workspace writable and its sibling hidden:\n%s", out)
	}
}

// TestSecretsStayHidden: what a command may try against the mounts that
// hide the secrets fails, for root too.
func TestSecretsStayHidden(t *testing.T) { both(t, testSecretsStayHidden) }

func testSecretsStayHidden(t *testing.T, b box) {
	need(t, true)
	t.Parallel()
	home, _ := secretHome(t)
	aws := filepath.Join(home, ".aws")
	// A workspace beside the home, and the home itself as the workspace,
	// where the command may write next to the hidden paths.
	for _, ws := range []string{t.TempDir(), home} {
		script := `
umount ` + aws + ` 2>/dev/null && echo UNMOUNTED
umount -l ` + aws + ` 2>/dev/null && echo UNMOUNTED-LAZY
mount -o remount,rw ` + aws + ` 2>/dev/null && echo REMOUNTED
mount --bind / ` + ws + ` 2>/dev/null && echo BOUND
mv ` + aws + ` ` + ws + `/aws-moved 2>/dev/null && echo RENAMED
rm -rf ` + aws + ` 2>/dev/null; test -e ` + aws + ` || echo REMOVED
ln ` + home + `/.netrc ` + ws + `/netrc-link 2>/dev/null && echo LINKED
unshare -Urm sh -c 'umount ` + aws + ` && cat ` + aws + `/credentials' 2>/dev/null
cat ` + aws + `/credentials ` + ws + `/netrc-link ` + ws + `/aws-moved/credentials 2>/dev/null
exit 0`
		out, code := b.sh(t, secretPolicy(home, WorkspaceWrite, ws), ws, script)
		if code != 0 {
			t.Fatalf("status %d\n%s", code, out)
		}
		if out != "" {
			t.Errorf("workspace %s: an attempt on the hidden paths succeeded:\n%s", ws, out)
		}
		if b, err := os.ReadFile(filepath.Join(aws, "credentials")); err != nil || string(b) != "SECRET-aws" {
			t.Errorf("the host's ~/.aws/credentials: %q, %v", b, err)
		}
	}
}

// TestSecretsNoNamespace: without a mount namespace, Landlock hides the
// secrets (secrets_landlock_linux_test.go tests what a command reads);
// what it cannot hide, a unix socket on this kernel, fails Wrap naming
// it, even with WithoutMountNamespace; BestEffort runs and names it in
// Missing.
func TestSecretsNoNamespace(t *testing.T) {
	need(t, false)
	home, _ := secretHome(t)
	saved := namespaceProbe
	namespaceProbe = func() error { return errors.New("user namespaces are disabled") }
	t.Cleanup(func() { namespaceProbe = saved })
	p := secretPolicy(home, ReadOnly)
	p.WithoutMountNamespace = true
	a := wrap(t, p, newPlanCmdForTest())
	if !a.HiddenByLandlock || !slices.Contains(a.Hidden, filepath.Join(home, ".ssh")) || strings.Contains(strings.Join(a.Missing, "; "), "cannot hide") {
		t.Errorf("HiddenByLandlock %v, Hidden %v, Missing %v", a.HiddenByLandlock, a.Hidden, a.Missing)
	}
	if kernelABI() < 9 {
		srv := newUnixServer(t, "unix")
		p.Hidden = append(p.Hidden, srv.path)
		_, err := p.Wrap(newPlanCmdForTest())
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "cannot hide the unix socket "+srv.path) {
			t.Fatalf("Wrap: %v, want ErrUnsupported naming the socket", err)
		}
		p.BestEffort = true
		a := wrap(t, p, newPlanCmdForTest())
		if slices.Contains(a.Hidden, srv.path) || !strings.Contains(strings.Join(a.Missing, "; "), "cannot hide the unix socket") {
			t.Errorf("Hidden %v, Missing %v", a.Hidden, a.Missing)
		}
	}
	// Nothing to hide: nothing missing, no Landlock hiding.
	empty := secretPolicy(t.TempDir(), ReadOnly)
	empty.WithoutMountNamespace = true
	if a, err := empty.Wrap(newPlanCmdForTest()); err != nil || a.HiddenByLandlock {
		t.Errorf("an empty home: %+v, %v", a, err)
	}
}

func TestSecretsBadPaths(t *testing.T) {
	need(t, false)
	t.Parallel()
	for _, h := range []string{"relative/path", "/"} {
		p := &Policy{Mode: ReadOnly, Hidden: []string{h}}
		if _, err := p.Wrap(newPlanCmdForTest()); err == nil {
			t.Errorf("Hidden %q: Wrap succeeded", h)
		}
	}
}

func newPlanCmdForTest() *exec.Cmd { return exec.Command("/bin/true") }

// TestSecretsSocket: a hidden unix socket (the ssh agent's) refuses
// connections; the server gets nothing.
func TestSecretsSocket(t *testing.T) {
	t.Parallel()
	both(t, testSecretsSocket)
}

func testSecretsSocket(t *testing.T, b box) {
	need(t, true)
	srv := newUnixServer(t, "unix")
	dir := t.TempDir()
	p := &Policy{Mode: ReadOnly, Hidden: []string{srv.path}}
	b.wantAct(t, p, dir, "ECONNREFUSED", "unix-dial", srv.path)
	if srv.received(t) {
		t.Error("the hidden socket's server got a line")
	}
	b.wantAct(t, &Policy{Mode: ReadOnly}, dir, "ok", "unix-dial", srv.path)
}
