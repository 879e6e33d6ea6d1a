package agents

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
)

func TestNpmRegistries(t *testing.T) {
	home := t.TempDir()
	npmrc := "; comment\nregistry = https://npm.corp.example/npm/\n@acme:registry=\"http://127.0.0.1:4873/\"\n//npm.corp.example/:_authToken=SECRET\nregistry=ftp://nope/\n@x:registry=http://[::1]/\n"
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"npm_config_registry": "http://127.0.0.1:9999/", "NPM_CONFIG_REGISTRY": "not a url"}
	got := npmRegistries(func(k string) string { return env[k] }, home)
	want := []string{"registry.npmjs.org", "127.0.0.1:9999", "npm.corp.example", "127.0.0.1:4873", "[::1]:80"}
	if !slices.Equal(got, want) {
		t.Errorf("npmRegistries = %q, want %q", got, want)
	}
	if got := npmRegistries(func(string) string { return "" }, t.TempDir()); !slices.Equal(got, []string{"registry.npmjs.org"}) {
		t.Errorf("without configuration: %q", got)
	}
}

// FuzzNpmrcRegistries: whatever an .npmrc or a variable says, what
// npmRegistries lists is a valid allow-list (a loopback address with its
// port, the rest names), and the default registry is on it.
func FuzzNpmrcRegistries(f *testing.F) {
	f.Add("registry=https://npm.example/\n@a:registry=http://127.0.0.1:1/", "http://[::1]:8/")
	f.Add("registry=http://127.0.0.1/", "https://*.example/")
	f.Add("registry=http://user:pw@host.example:8080/x", "http://0.0.0.0/")
	f.Fuzz(func(t *testing.T, npmrc, env string) {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
			t.Fatal(err)
		}
		got := npmRegistries(func(k string) string {
			if k == "npm_config_registry" {
				return env
			}
			return ""
		}, home)
		if len(got) == 0 || got[0] != "registry.npmjs.org" {
			t.Fatalf("%q", got)
		}
		if err := sandbox.CheckAllowHosts(got); err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		for _, h := range got {
			if strings.ContainsAny(h, "/@ \n") {
				t.Fatalf("%q in %q", h, got)
			}
		}
	})
}
