package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGoProxy: the GOPROXY of a sandboxed command puts the user's module
// cache first, as a file:// proxy, in front of the GOPROXY the user's go
// would use: the environment's, else the environment file's, else Go's
// default; off stays off.
func TestGoProxy(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".config")
	if err := os.MkdirAll(filepath.Join(cfg, "go"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return name
	}
	// `go env -w` as the user ran it: a proxy and a module cache.
	write(filepath.Join(cfg, "go", "env"), "GOPROXY=https://corp.example/mod,direct\nGOMODCACHE=/data/modcache\n")
	offFile := write(filepath.Join(home, "off.env"), "GOPROXY=off\n")
	commentFile := write(filepath.Join(home, "comments.env"), "# GOPROXY=https://wrong.example\n GOPROXY=https://wrong.example\ngoproxy=x\nGOPATH=/gp/one:/gp/two\n")
	xdg := filepath.Join(home, "xdg")
	if err := os.MkdirAll(filepath.Join(xdg, "go"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(xdg, "go", "env"), "GOPROXY=https://xdg.example\nGOPROXY=https://later.example\n")

	file := func(modcache string) string { return "file://" + modcache + "/cache/download," }
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"nothing set", nil, "https://proxy.golang.org,direct"},
		{"only HOME", []string{"HOME=/h"}, file("/h/go/pkg/mod") + "https://proxy.golang.org,direct"},
		{"the environment's", []string{"HOME=" + home, "GOPROXY=https://env.example", "GOMODCACHE=/m"}, file("/m") + "https://env.example"},
		{"the environment file's", []string{"HOME=" + home}, file("/data/modcache") + "https://corp.example/mod,direct"},
		{"the environment wins over the file", []string{"HOME=" + home, "GOMODCACHE=/m", "GOPROXY=direct"}, file("/m") + "direct"},
		{"an empty variable is unset", []string{"HOME=" + home, "GOPROXY="}, file("/data/modcache") + "https://corp.example/mod,direct"},
		{"off in the environment", []string{"HOME=" + home, "GOPROXY=off"}, "off"},
		{"off in the environment file", []string{"HOME=" + home, "GOENV=" + offFile, "GOMODCACHE=/m"}, "off"},
		{"GOENV=off", []string{"HOME=" + home, "GOENV=off", "GOMODCACHE=/m"}, file("/m") + "https://proxy.golang.org,direct"},
		{"GOENV names the file", []string{"HOME=" + home, "GOENV=" + commentFile}, file("/gp/one/pkg/mod") + "https://proxy.golang.org,direct"},
		{"XDG_CONFIG_HOME", []string{"HOME=" + home, "XDG_CONFIG_HOME=" + xdg, "GOMODCACHE=/m"}, file("/m") + "https://later.example"},
		{"no file, ~/go/pkg/mod", []string{"HOME=/h", "GOPROXY=https://p.example"}, file("/h/go/pkg/mod") + "https://p.example"},
		{"GOENV is a directory", []string{"HOME=" + home, "GOENV=" + home, "GOMODCACHE=/m"}, file("/m") + "https://proxy.golang.org,direct"},
		{"a relative module cache", []string{"HOME=" + home, "GOMODCACHE=rel", "GOPROXY=direct"}, "direct"},
		{"a comma in the module cache", []string{"HOME=" + home, "GOMODCACHE=/a,b", "GOPROXY=direct"}, "direct"},
		{"a space in the module cache", []string{"HOME=" + home, "GOMODCACHE=/a b", "GOPROXY=direct"}, "file:///a%20b/cache/download,direct"},
		{"the last entry wins", []string{"HOME=" + home, "GOPROXY=a", "GOPROXY=https://b.example", "GOMODCACHE=/m"}, file("/m") + "https://b.example"},
	} {
		if got := goProxyFor(tc.env); got != tc.want {
			t.Errorf("%s: GOPROXY = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCacheEnv: the own caches' variables replace the caller's, a cache
// left out gets a directory in the command's TMPDIR, and GOPROXY is made
// from the environment as it was.
func TestCacheEnv(t *testing.T) {
	env := []string{"HOME=/h", "GOENV=off", "GOCACHE=/h/.cache/go-build", "GOMODCACHE=/h/mod", "XDG_CACHE_HOME=/h/.cache", "KEEP=1", "UV_LINK_MODE=hardlink"}
	dirs := map[string]string{"go-build": "/d/go-build", "go-mod": "/d/go-mod", "npm": "/d/npm", "pip": "/d/pip", "cargo": "/d/cargo", "uv": "/d/uv"}
	got := cacheEnv(slices.Clone(env), dirs, "/tmp/t", []string{"/ws"})
	want := map[string]string{
		"GOCACHE":          "/d/go-build",
		"GOMODCACHE":       "/d/go-mod",
		"npm_config_cache": "/d/npm",
		"PIP_CACHE_DIR":    "/d/pip",
		"CARGO_HOME":       "/d/cargo",
		"UV_CACHE_DIR":     "/d/uv",
		"UV_LINK_MODE":     "copy",
		"XDG_CACHE_HOME":   "/tmp/t/cache-xdg", // left out
		"GOPROXY":          "file:///h/mod/cache/download,https://proxy.golang.org,direct",
		"KEEP":             "1",
		"HOME":             "/h",
	}
	for k, v := range want {
		if g := lookupEnv(got, k); g != v {
			t.Errorf("%s = %q, want %q", k, g, v)
		}
	}
	seen := map[string]bool{}
	for _, kv := range got {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Errorf("%s is in the environment twice: %q", k, got)
		}
		seen[k] = true
	}
}

// TestCacheEnvWritable: a user's cache that the policy makes writable
// (--writable ~/.cache/go-build, or a workspace that holds it) keeps its
// variable pointing at it, where the caller's environment has it or, not
// set, where the tool's default is.
func TestCacheEnvWritable(t *testing.T) {
	dirs := map[string]string{}
	for _, c := range ownCaches {
		dirs[c.dir] = "/d/" + c.dir
	}
	env := []string{"HOME=/h", "GOENV=off", "npm_config_cache=/n"}
	for _, tc := range []struct {
		name     string
		writable []string
		kept     []string // at the user's caches
	}{
		{"none", []string{"/ws"}, nil},
		{"the Go build cache", []string{"/ws", "/h/.cache/go-build"}, []string{"GOCACHE"}},
		{"~/.cache", []string{"/ws", "/h/.cache"}, []string{"GOCACHE", "PIP_CACHE_DIR", "UV_CACHE_DIR", "XDG_CACHE_HOME"}},
		{"npm's, as the environment names it", []string{"/ws", "/n"}, []string{"npm_config_cache"}},
		{"the home directory", []string{"/h"}, []string{"GOCACHE", "GOMODCACHE", "PIP_CACHE_DIR", "CARGO_HOME", "UV_CACHE_DIR", "XDG_CACHE_HOME"}},
	} {
		got := cacheEnv(slices.Clone(env), dirs, "/tmp/t", tc.writable)
		for _, c := range ownCaches {
			want := "/d/" + c.dir
			if slices.Contains(tc.kept, c.env) {
				want = userCache(c.env, func(k string) string { return lookupEnv(env, k) })
			}
			if g := lookupEnv(got, c.env); g != want {
				t.Errorf("%s: %s = %q, want %q", tc.name, c.env, g, want)
			}
		}
	}
}

// TestUserCache: where the user's tools keep their caches, as the
// environment says or by their defaults.
func TestUserCache(t *testing.T) {
	for _, tc := range []struct {
		env            []string
		variable, want string
	}{
		{[]string{"HOME=/h"}, "GOCACHE", "/h/.cache/go-build"},
		{[]string{"HOME=/h", "XDG_CACHE_HOME=/x"}, "GOCACHE", "/x/go-build"},
		{[]string{"HOME=/h", "GOCACHE=/g"}, "GOCACHE", "/g"},
		{[]string{"HOME=/h", "GOPATH=/p:/q"}, "GOMODCACHE", "/p/pkg/mod"},
		{[]string{"HOME=/h"}, "GOMODCACHE", "/h/go/pkg/mod"},
		{[]string{"HOME=/h"}, "npm_config_cache", "/h/.npm"},
		{[]string{"HOME=/h", "XDG_CACHE_HOME=/x"}, "PIP_CACHE_DIR", "/x/pip"},
		{[]string{"HOME=/h"}, "CARGO_HOME", "/h/.cargo"},
		{[]string{"HOME=/h"}, "UV_CACHE_DIR", "/h/.cache/uv"},
		{[]string{"HOME=/h", "XDG_CACHE_HOME=rel"}, "XDG_CACHE_HOME", "/h/.cache"},
		{nil, "GOCACHE", ""},
	} {
		get := func(k string) string { return lookupEnv(tc.env, k) }
		if got := userCache(tc.variable, get); got != tc.want {
			t.Errorf("%q: %s is %q, want %q", tc.env, tc.variable, got, tc.want)
		}
	}
}

// FuzzParseGoEnv: whatever the file holds, what is read is a set of
// variables cmd/go would read the same way: names that start with an
// upper-case letter and hold no "=", values on one line, each the value
// of the last line that sets it; and the GOPROXY made of it ends in it.
func FuzzParseGoEnv(f *testing.F) {
	f.Add([]byte("GOPROXY=https://proxy.example,direct\nGOMODCACHE=/m\n"))
	f.Add([]byte("# comment\n=x\nA=\nA=b=c\n\n lower=1\nGOPROXY=off"))
	f.Add([]byte("GOPROXY=a\r\nGOPROXY=b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := parseGoEnv(data)
		for k, v := range m {
			if k == "" || k[0] < 'A' || k[0] > 'Z' || strings.ContainsAny(k, "=\n") || strings.Contains(v, "\n") {
				t.Fatalf("read %q=%q from %q", k, v, data)
			}
			// The last line that sets k has v.
			var last string
			for line := range strings.SplitSeq(string(data), "\n") {
				if name, val, ok := strings.Cut(line, "="); ok && name == k {
					last = val
				}
			}
			if last != v {
				t.Fatalf("%s = %q, want the last line's %q, in %q", k, v, last, data)
			}
		}
		if p, ok := m["GOPROXY"]; ok && strings.TrimSpace(p) != "" {
			if got := goProxy(p, "/m"); !strings.HasSuffix(got, p) {
				t.Fatalf("goProxy(%q) = %q, which does not end in it", p, got)
			}
		}
	})
}
