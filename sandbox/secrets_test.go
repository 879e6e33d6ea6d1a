package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRedactNpmrc(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in, want string
		removed        int
	}{
		{"empty", "", "", 0},
		{"kept", "registry=https://r.example/\n; comment\n# _authToken=x\n[section]\ncolor=false\n", "registry=https://r.example/\n; comment\n# _authToken=x\n[section]\ncolor=false\n", 0},
		{"scoped token", "@org:registry=https://r.example/\n//r.example/:_authToken=npm_abc\nx=1\n", "@org:registry=https://r.example/\nx=1\n", 1},
		{"global", "_auth=dXNlcjpwYXNz\n_authToken = tok\n_password=cGFzcw==\nemail=a@b\n", "email=a@b\n", 3},
		{"case, quotes, spaces", "  //R.example:8080/path/:_AuthToken   =  t\n\"//r/:_password\"=p\n'_auth'=a\n", "", 3},
		{"no equals", "_authToken\nalways-auth\n", "always-auth\n", 1},
		{"crlf and no final newline", "a=1\r\n_auth=x\r\nb=2", "a=1\r\nb=2", 1},
		{"array key", "_authToken[]=x\nca[]=cert\n", "ca[]=cert\n", 1},
		{"env reference", "//r/:_authToken=${NPM_TOKEN}\n", "", 1},
		{"lookalikes kept", "//r/:username=me\n//r/:certfile=/p\nauthType=legacy\n_authTokenX=1\n", "//r/:username=me\n//r/:certfile=/p\nauthType=legacy\n_authTokenX=1\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, n := RedactNpmrc([]byte(tt.in))
			if string(got) != tt.want || n != tt.removed {
				t.Errorf("RedactNpmrc(%q) = %q, %d; want %q, %d", tt.in, got, n, tt.want, tt.removed)
			}
		})
	}
}

// FuzzRedactNpmrc checks RedactNpmrc's invariants on any input: the
// output is the input with whole lines taken out (as many as it says),
// none of the lines left sets a credential, and redacting again changes
// nothing.
func FuzzRedactNpmrc(f *testing.F) {
	for _, s := range []string{
		"registry=https://r/\n//r/:_authToken=t\n",
		"_auth=x\r\n_password=y",
		"\"//h/:_authToken\" = z\n[x]\n;c\n",
		"\x00=\n=_auth\n:_auth=\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, removed := RedactNpmrc(in)
		inLines, outLines := splitLines(in), splitLines(out)
		if len(inLines)-len(outLines) != removed {
			t.Fatalf("%d lines in, %d out, %d said removed", len(inLines), len(outLines), removed)
		}
		// out's lines are a subsequence of in's.
		j := 0
		for _, l := range inLines {
			if j < len(outLines) && bytes.Equal(l, outLines[j]) {
				j++
			}
		}
		if j != len(outLines) {
			t.Fatalf("output %q is not input %q with lines removed", out, in)
		}
		for _, l := range outLines {
			if npmrcSecretLine(l) {
				t.Fatalf("credential line %q kept", l)
			}
		}
		if again, n := RedactNpmrc(out); n != 0 || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
	})
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func TestDefaultSecrets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"id_ed25519.pub", "id_rsa.pub", "id_rsa"} {
		if err := os.WriteFile(filepath.Join(home, ".ssh", n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := DefaultSecrets(home)
	for _, want := range []string{".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json", ".netrc",
		".git-credentials", ".gnupg", ".pypirc", ".password-store", ".mozilla", ".config/google-chrome", ".config/chromium",
		".config/BraveSoftware", ".codex/auth.json", ".claude/.credentials.json", ".gemini/oauth_creds.json",
		".qwen/oauth_creds.json", ".local/share/opencode/auth.json", ".pi/agent/auth.json", ".omp/agent/agent.db"} {
		if !slices.Contains(s.Hidden, filepath.Join(home, want)) {
			t.Errorf("Hidden lacks ~/%s", want)
		}
	}
	for _, want := range []string{".ssh/known_hosts", ".ssh/config", ".ssh/id_ed25519.pub", ".ssh/id_rsa.pub"} {
		if !slices.Contains(s.Readable, filepath.Join(home, want)) {
			t.Errorf("Readable lacks ~/%s", want)
		}
	}
	if slices.Contains(s.Readable, filepath.Join(home, ".ssh/id_rsa")) {
		t.Error("a private key is Readable")
	}
	if !slices.Equal(s.Redacted, []string{filepath.Join(home, ".npmrc")}) {
		t.Errorf("Redacted = %v", s.Redacted)
	}
	for _, bad := range []string{"", "rel"} {
		if got := DefaultSecrets(bad); len(got.Hidden)+len(got.Readable)+len(got.Redacted) != 0 || got.Hidden == nil {
			t.Errorf("DefaultSecrets(%q) = %+v, want an empty, non-nil Hidden", bad, got)
		}
	}
	p := &Policy{Readable: []string{"/keep"}}
	s.Apply(p)
	if !slices.Contains(p.Readable, "/keep") || len(p.Hidden) != len(s.Hidden) {
		t.Errorf("Apply: %+v", p)
	}
}
