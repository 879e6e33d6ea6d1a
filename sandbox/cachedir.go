package sandbox

import (
	"bytes"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
)

// This file is about Policy.CacheDir: the caches a sandboxed command uses
// instead of the user's. The user's caches feed builds that run later
// with the user's rights (a Go build cache entry is linked into the next
// binary, an extracted module or crate is compiled, a wheel is
// installed), so a sandboxed command must not write them; it gets
// directories of its own below CacheDir, which only sandboxed commands
// use, and the variables that point the tools at them.

// ownCache is one of a policy's own caches: the variable that points a
// tool at it, and its directory below Policy.CacheDir.
type ownCache struct {
	env, dir string
}

// ownCaches are the caches below Policy.CacheDir. XDG_CACHE_HOME comes
// last: the others would otherwise default to places inside it, and
// only it covers what else follows XDG (pre-commit, poetry, yarn 1,
// playwright and the like).
var ownCaches = []ownCache{
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"npm_config_cache", "npm"},
	{"PIP_CACHE_DIR", "pip"},
	{"CARGO_HOME", "cargo"},
	{"UV_CACHE_DIR", "uv"},
	{"XDG_CACHE_HOME", "xdg"},
}

// defaultGoProxy is GOPROXY when neither the environment nor Go's
// environment file sets it (the value of GOROOT/go.env in Go's
// distribution).
const defaultGoProxy = "https://proxy.golang.org,direct"

// maxGoEnvFile bounds how much of Go's environment file is read: `go env
// -w` writes a few lines.
const maxGoEnvFile = 64 << 10

// DefaultCacheDir is where sandboxed commands keep their own caches by
// default (Policy.CacheDir): ${XDG_STATE_HOME:-~/.local/state}/acpterm/sandbox-cache
// on Unix, macOS included; the user's configuration directory's
// acpterm/sandbox-cache elsewhere. That is acpterm's state directory,
// which no sandbox of acpterm's makes writable as a whole. It returns ""
// when there is no home directory to put it in.
func DefaultCacheDir() string {
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		dir, err := os.UserConfigDir()
		if err != nil || dir == "" {
			return ""
		}
		return filepath.Join(dir, "acpterm", "sandbox-cache")
	}
	// The XDG spec: a relative path is invalid and is ignored.
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "acpterm", "sandbox-cache")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "state", "acpterm", "sandbox-cache")
}

// cacheEnv returns env with the variables of the own caches set: each of
// dirs (by ownCaches' dir; "" when it was left out) or, for one left
// out, a directory below tmp, which the command may write and which goes
// with it (a cold cache, but never the user's). GOPROXY is set too (see
// goProxyFor), from what env says before it is changed.
//
// A variable whose user's cache (userCache) lies in writable, the
// policy's Writable paths (real), names that cache: the user made it
// writable knowingly (--writable ~/.cache/go-build), or the workspace
// holds it (the home directory), and the command may write it anyway.
func cacheEnv(env []string, dirs map[string]string, tmp string, writable []string) []string {
	orig := env // the loop makes new slices
	getenv := func(k string) string { return lookupEnv(orig, k) }
	file := readGoEnvFile(getenv)
	get := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return file[k]
	}
	proxy := goProxy(get("GOPROXY"), userModCache(get))
	for _, c := range ownCaches {
		if u := userCache(c.env, get); u != "" && writableAlready(u, writable) {
			// Set, not left unset: its default may follow another
			// variable set here (GOCACHE follows XDG_CACHE_HOME).
			env = append(withoutEnv(env, c.env), c.env+"="+u)
			continue
		}
		d := dirs[c.dir]
		if d == "" {
			if tmp == "" {
				continue
			}
			d = filepath.Join(tmp, "cache-"+c.dir)
		}
		env = append(withoutEnv(env, c.env), c.env+"="+d)
	}
	// uv links what it installs to its cache by default: a virtualenv a
	// sandboxed uv made in one workspace would share files with a cache
	// that every sandboxed command may rewrite in place.
	env = append(withoutEnv(env, "UV_LINK_MODE"), "UV_LINK_MODE=copy")
	return append(withoutEnv(env, "GOPROXY"), "GOPROXY="+proxy)
}

// userCache is where the user's tool keeps the cache that variable names
// when get describes its environment (and, for Go, its environment
// file); "" when that cannot be told.
func userCache(variable string, get func(string) string) string {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return ""
	}
	home := abs(get("HOME"))
	under := func(base string, elem ...string) string {
		if base == "" {
			return ""
		}
		return filepath.Join(append([]string{base}, elem...)...)
	}
	cache := abs(get("XDG_CACHE_HOME"))
	if cache == "" {
		cache = under(home, ".cache")
	}
	if v := abs(get(variable)); v != "" {
		return v
	}
	switch variable {
	case "GOCACHE":
		return under(cache, "go-build")
	case "GOMODCACHE":
		return abs(userModCache(get))
	case "npm_config_cache":
		return under(home, ".npm")
	case "PIP_CACHE_DIR":
		return under(cache, "pip")
	case "CARGO_HOME":
		return under(home, ".cargo")
	case "UV_CACHE_DIR":
		return under(cache, "uv")
	case "XDG_CACHE_HOME":
		return cache
	}
	return ""
}

// writableAlready reports whether path, or the path it resolves to, lies
// in one of writable (real paths).
func writableAlready(path string, writable []string) bool {
	if len(writable) == 0 {
		return false
	}
	if within(path, writable) {
		return true
	}
	real, err := filepath.EvalSymlinks(path)
	return err == nil && within(real, writable)
}

// goProxyFor is the GOPROXY of a sandboxed command whose environment
// (before its own caches are set) is env: the download directory of the
// user's module cache as a file:// proxy, then the proxies the user's go
// would use. A confined build then finds the modules the user has
// already downloaded without the network, and what it takes from there
// is checked against go.sum (and the checksum database) as what any
// proxy serves is.
func goProxyFor(env []string) string {
	getenv := func(k string) string { return lookupEnv(env, k) }
	file := readGoEnvFile(getenv)
	get := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return file[k]
	}
	return goProxy(get("GOPROXY"), userModCache(get))
}

// goProxy puts the file:// proxy of modCache's download directory in
// front of user (GOPROXY as the user has it; "" for Go's default). "off"
// stays off, and a module cache that is not an absolute path, or whose
// name would not survive GOPROXY's list syntax, is not added.
func goProxy(user, modCache string) string {
	if strings.TrimSpace(user) == "" {
		user = defaultGoProxy
	}
	if strings.TrimSpace(user) == "off" {
		return user
	}
	if modCache == "" || !filepath.IsAbs(modCache) || strings.ContainsAny(modCache, ",|") {
		return user
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(modCache, "cache", "download"))}
	return u.String() + "," + user
}

// userModCache is the module cache of the go that get describes (the
// environment, then Go's environment file): GOMODCACHE, else the first
// GOPATH entry's pkg/mod, else ~/go/pkg/mod, as cmd/go has it.
func userModCache(get func(string) string) string {
	if v := get("GOMODCACHE"); v != "" {
		return filepath.Clean(v)
	}
	if gp := filepath.SplitList(get("GOPATH")); len(gp) > 0 && gp[0] != "" {
		return filepath.Join(gp[0], "pkg", "mod")
	}
	if home := get("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, "go", "pkg", "mod")
	}
	return ""
}

// readGoEnvFile reads the environment file (`go env -w`) of the go that
// getenv describes: GOENV, else the user's configuration directory's
// go/env; nil when there is none or GOENV is off. The name may come from
// the command's requested environment, so the file is opened without
// blocking (a FIFO would hang the host), only a regular file is read,
// and only its first maxGoEnvFile bytes.
func readGoEnvFile(getenv func(string) string) map[string]string {
	name := getenv("GOENV")
	switch name {
	case "off":
		return nil
	case "":
		dir := getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(dir) {
			home := getenv("HOME")
			if !filepath.IsAbs(home) {
				return nil
			}
			dir = filepath.Join(home, ".config")
		}
		name = filepath.Join(dir, "go", "env")
	}
	if !filepath.IsAbs(name) {
		return nil
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGoEnvFile))
	if err != nil {
		return nil
	}
	return parseGoEnv(data)
}

// parseGoEnv reads Go's environment file as cmd/go does: KEY=VALUE
// lines, the value as it stands; lines without "=" or whose first byte
// is not an upper-case letter are ignored; a later line wins.
func parseGoEnv(data []byte) map[string]string {
	m := map[string]string{}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		i := bytes.IndexByte(line, '=')
		if i < 0 || line[0] < 'A' || line[0] > 'Z' {
			continue
		}
		m[string(line[:i])] = string(line[i+1:])
	}
	return m
}

// lookupEnv is the value of name in env as exec would pass it: the last
// entry wins.
func lookupEnv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// DefaultWritable is a Writable list for WorkspaceWrite: the roots
// followed by those of DefaultCaches that exist and that no symlink a
// sandbox could have made leads to. The command's TempDir is always
// writable and need not be listed. The user's caches in it can be
// poisoned for the user's later, unconfined builds (see DefaultCaches):
// Policy{Writable: roots, CacheDir: DefaultCacheDir()} gives commands
// caches of their own instead.
//
// Policy{Writable: roots, Caches: DefaultCaches()} is the same list
// checked again at every Wrap, with what is left out named in
// Applied.LeftOut: prefer it where a policy outlives the moment it is
// made, since a sandboxed command may replace a cache by a link at any
// time (Wrap then fails on the path listed here).
func DefaultWritable(roots ...string) []string {
	out := append([]string(nil), roots...)
	caches := DefaultCaches()
	r := newResolver(append(slices.Clone(roots), caches...)...)
	for _, p := range caches {
		if slices.Contains(out, p) {
			continue
		}
		if _, _, err := r.resolve(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// DefaultCaches is the usual Caches list: the build caches of Go, npm,
// pip and cargo and the generic user cache directory, whether they exist
// or not (Wrap skips what does not).
//
// The caches are there so that builds and tests work; the price is that a
// sandboxed command can poison them (a doctored Go build cache entry or
// package runs later in unsandboxed builds). Policy.CacheDir keeps builds
// working without that price, with caches that only sandboxed commands
// use; list these only for commands trusted not to poison them.
//
// Locations follow the tools' environment variables and defaults; values
// set only in a tool's own config file (`go env -w`, .npmrc, pip.conf) are
// not read.
func DefaultCaches() []string {
	home, _ := os.UserHomeDir()
	cache, _ := os.UserCacheDir()
	var cands []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && !slices.Contains(cands, filepath.Clean(p)) {
			cands = append(cands, filepath.Clean(p))
		}
	}
	under := func(base string, elem ...string) string {
		if base == "" {
			return ""
		}
		return filepath.Join(append([]string{base}, elem...)...)
	}

	// Go: GOCACHE ("off" disables it), else UserCacheDir/go-build;
	// GOMODCACHE, else the first GOPATH entry's pkg/mod, else ~/go/pkg/mod.
	if v := os.Getenv("GOCACHE"); v != "" {
		if v != "off" {
			add(v)
		}
	} else {
		add(under(cache, "go-build"))
	}
	if v := os.Getenv("GOMODCACHE"); v != "" {
		add(v)
	} else if gp := filepath.SplitList(os.Getenv("GOPATH")); len(gp) > 0 && gp[0] != "" {
		add(under(gp[0], "pkg", "mod"))
	} else {
		add(under(home, "go", "pkg", "mod"))
	}
	// npm
	if v := os.Getenv("npm_config_cache"); v != "" {
		add(v)
	} else {
		add(under(home, ".npm"))
	}
	// pip
	if v := os.Getenv("PIP_CACHE_DIR"); v != "" {
		add(v)
	} else {
		add(under(cache, "pip"))
	}
	// cargo
	cargo := os.Getenv("CARGO_HOME")
	if cargo == "" {
		cargo = under(home, ".cargo")
	}
	add(under(cargo, "registry"))
	add(under(cargo, "git"))
	// everything else that follows XDG
	add(cache)
	return cands
}
