//go:build linux

package terminal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
)

// needHiding skips where the sandbox cannot hide paths: no Landlock, or
// no mount namespace.
func needHiding(t *testing.T) {
	t.Helper()
	if rep := sandbox.Support(); rep.LandlockABI < 3 || !rep.Namespaces {
		t.Skipf("the sandbox cannot hide paths here: Landlock ABI %d, namespaces %v (%s)", rep.LandlockABI, rep.Namespaces, rep.NamespacesErr)
	}
}

// fakeHome makes a home directory with a few secrets, the files of ~/.ssh
// that stay readable, and an .npmrc with a token.
func fakeHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for name, content := range map[string]string{
		".ssh/id_ed25519":          "SECRET-key",
		".ssh/known_hosts":         "PUBLIC-known-hosts",
		".aws/credentials":         "SECRET-aws",
		".netrc":                   "SECRET-netrc",
		".gemini/oauth_creds.json": "SECRET-gemini",
		".npmrc":                   "registry=https://r.example/\n//r.example/:_authToken=SECRET-npm\n",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// catAll prints each file's content or FAILED.
func catAll(home string, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString("cat " + filepath.Join(home, n) + " 2>/dev/null || echo FAILED; echo; ")
	}
	return b.String()
}

// TestSandboxSecrets: commands run by a Manager with a sandbox policy
// read none of the secrets its Hidden list names (nil: the user's home's
// defaults), the .npmrc without its token, known_hosts as it is; a path
// of Readable is readable again; Info.Sandbox names what was hidden.
func TestSandboxSecrets(t *testing.T) {
	needHiding(t)
	home := fakeHome(t)
	// Hidden nil takes the defaults of the user's home directory: this
	// one, for the manager made below.
	t.Setenv("HOME", home)
	ws := t.TempDir()
	for _, tt := range []struct {
		name    string
		sp      sandbox.Policy
		read    []string // must be read
		notRead []string // must not be
	}{
		{"default", sandbox.Policy{Mode: sandbox.WorkspaceWrite},
			[]string{"PUBLIC-known-hosts", "registry=https://r.example/"},
			[]string{"SECRET-key", "SECRET-aws", "SECRET-netrc", "SECRET-gemini", "SECRET-npm"}},
		{"readable", sandbox.Policy{Mode: sandbox.ReadOnly, Readable: []string{filepath.Join(home, ".aws")}},
			[]string{"SECRET-aws", "PUBLIC-known-hosts"},
			[]string{"SECRET-key", "SECRET-netrc", "SECRET-npm"}},
		{"nothing hidden", sandbox.Policy{Mode: sandbox.ReadOnly, Hidden: []string{}},
			[]string{"SECRET-key", "SECRET-aws"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t, &Options{DefaultCwd: ws, Policy: &Policy{Roots: []string{ws}, Sandbox: &tt.sp}})
			info := mustCreate(t, m, Request{Command: catAll(home, ".ssh/id_ed25519", ".ssh/known_hosts", ".aws/credentials",
				".netrc", ".gemini/oauth_creds.json", ".npmrc")})
			wantStatus(t, mustWait(t, m, info), ExitStatus{ExitCode: code(0)})
			out := mustOutput(t, m, info).Text
			mustRelease(t, m, info)
			for _, w := range tt.read {
				if !strings.Contains(out, w) {
					t.Errorf("%s not read:\n%s", w, out)
				}
			}
			for _, w := range tt.notRead {
				if strings.Contains(out, w) {
					t.Errorf("%s read:\n%s", w, out)
				}
			}
			if len(tt.notRead) > 0 && (info.Sandbox == nil || len(info.Sandbox.Hidden) == 0) {
				t.Errorf("Info.Sandbox names nothing hidden: %v", info.Sandbox)
			}
		})
	}
}
