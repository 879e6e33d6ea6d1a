//go:build realagents

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
)

// TestRealAgentsWrites finds out what each real agent writes, and holds
// its profile to it. Each agent's scripted turn runs unconfined
// (--sandbox-agent=false) in a fresh HOME, with XDG directories and a
// TMPDIR of its own; every file it leaves in HOME must lie in its
// profile's writable paths (else, confined, that write fails), and what it
// leaves in TMPDIR is logged (a confined agent gets a private TMPDIR).
// Then the same turn runs confined, as by default, and must have saved
// what the agent keeps of a session (its saves pattern) in HOME.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsWrites -v
func TestRealAgentsWrites(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	reg, err := agents.Load(filepath.Join(t.TempDir(), "none.json"))
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for _, a := range scriptedAgents {
		if only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			// Not beside the workspace, in the test's directory: opencode
			// 1.18.33 then fails to start (BadResource reading the
			// workspace's opencode.json).
			tmp, err := os.MkdirTemp("", "acpterm-agent-tmp-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			s := runScripted(t, bin, a, []string{"--sandbox-agent=false"}, a.name+"-w", "", "TMPDIR="+tmp)
			if s.r.code != 0 || !s.ran {
				t.Fatalf("unconfined: exit %d, command ran %v\nstderr:\n%.3000s", s.r.code, s.ran, s.r.stderr)
			}
			written := newFiles(t, s.home, filesOf(a, s.m.URL()))
			t.Logf("unconfined, %s wrote in HOME:\n  %s", a.name, strings.Join(written, "\n  "))
			if tmpFiles := newFiles(t, tmp, nil); len(tmpFiles) > 0 {
				t.Logf("and in its TMPDIR:\n  %s", strings.Join(tmpFiles, "\n  "))
			}
			ag, _ := reg.Lookup(a.name)
			prof, ok := reg.ProfileFor(ag.Command)
			if !ok {
				t.Fatalf("%s has no profile", a.name)
			}
			res, err := prof.Resolve(homeEnv(s.home), nil)
			if err != nil {
				t.Fatal(err)
			}
			// A file the profile shadows is kept, confined, as its
			// shadow (claude's ~/.claude.json as .claude/.claude.json).
			shadowed := map[string]string{}
			for _, sh := range res.Shadows {
				file, err1 := filepath.Rel(s.home, sh.File)
				path, err2 := filepath.Rel(s.home, sh.Path)
				if err1 == nil && err2 == nil {
					shadowed[file] = path
				}
			}
			for _, f := range written {
				if _, ok := shadowed[f]; ok || notTheAgents(a, f) {
					continue
				}
				p := filepath.Join(s.home, f)
				if !slices.Contains(res.Files, p) && !slices.ContainsFunc(res.Dirs, func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") }) {
					t.Errorf("%s writes %s, outside its profile (%s)", a.name, f, prof.Describe())
				}
			}
			if a.saves == "" {
				t.Fatalf("scriptedAgents has no saves pattern for %s", a.name)
			}
			if !slices.ContainsFunc(written, func(f string) bool { return matchSaved(a.saves, f) }) {
				t.Errorf("unconfined, %s saved nothing that matches %s", a.name, a.saves)
			}

			c := runScripted(t, bin, a, nil, a.name+"-c", "")
			if c.r.code != 0 || !c.ran {
				t.Fatalf("confined: exit %d, command ran %v\nstderr:\n%.3000s", c.r.code, c.ran, c.r.stderr)
			}
			saved := newFiles(t, c.home, filesOf(a, c.m.URL()))
			t.Logf("confined, %s wrote in HOME:\n  %s", a.name, strings.Join(saved, "\n  "))
			if !slices.ContainsFunc(saved, func(f string) bool { return matchSaved(a.saves, f) }) {
				t.Errorf("confined, %s saved nothing that matches %s; it wrote:\n  %s", a.name, a.saves, strings.Join(saved, "\n  "))
			}
			sameShapes(t, a, written, saved, shadowed)
		})
	}
}

// notTheAgents reports whether f, a file an unconfined run of a left in
// HOME, is not the agent's to account for: acpterm's own session store
// and config (the agents.json the test writes), the build caches, what a
// writes unconfined only.
func notTheAgents(a scriptedAgent, f string) bool {
	return strings.HasPrefix(f, ".local/state/acpterm/") || strings.HasPrefix(f, ".config/acpterm/") ||
		slices.ContainsFunc(buildCaches, func(c string) bool { return strings.HasPrefix(f, c) }) ||
		slices.ContainsFunc(a.unconfinedOnly, func(pat string) bool { return matchSaved(pat, f) })
}

// sameShapes: the agent's settings, logs and databases are kept confined
// too: each file of the unconfined run (written) has one of the same
// shape (names with their numbers, IDs and times blanked out) in the
// confined run (saved), or, for a file the profile shadows, its shadow
// (shadowed maps one to the other).
func sameShapes(t *testing.T, a scriptedAgent, written, saved []string, shadowed map[string]string) {
	t.Helper()
	shapes := map[string]bool{}
	for _, f := range saved {
		shapes[fileShape(f)] = true
	}
	for _, f := range written {
		if notTheAgents(a, f) || transient(f) {
			continue
		}
		if sh, ok := shadowed[f]; ok {
			f = sh
		}
		if !shapes[fileShape(f)] {
			t.Errorf("unconfined, %s wrote %s; confined, nothing like it", a.name, f)
		}
	}
}

// buildCaches are the directories of HOME that every command acpterm
// confines may write (sandbox.DefaultWritable's caches, as runScripted's
// environment places them), and so a confined agent too: npm's cache
// (pi runs npm), ~/.cache (omp's bun keeps its transpiler cache there).
var buildCaches = []string{".cache/", ".npm/", "go/pkg/mod/", ".cargo/registry/", ".cargo/git/"}

// homeEnv is the environment runScripted gives the agent, as a getenv.
func homeEnv(home string) func(string) string {
	m := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
	}
	return func(k string) string { return m[k] }
}

// newFiles lists the files and links below dir, relative to it, but for
// those seeded (relative paths the test wrote before the run).
func newFiles(t *testing.T, dir string, seeded map[string]string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if _, ok := seeded[rel]; !ok {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// matchSaved reports whether the relative path f matches pattern, a
// filepath.Match pattern in which "**/" stands for any number of
// directories.
func matchSaved(pattern, f string) bool {
	head, tail, deep := strings.Cut(pattern, "**/")
	if !deep {
		ok, _ := filepath.Match(pattern, f)
		return ok
	}
	if !strings.HasPrefix(f, head) {
		return false
	}
	rest := f[len(head):]
	for {
		if ok, _ := filepath.Match(tail, rest); ok {
			return true
		}
		_, after, found := strings.Cut(rest, "/")
		if !found {
			return false
		}
		rest = after
	}
}

// idLike are the parts of a file name that differ from run to run: runs
// of hex digits, dashes and underscores with a digit among them (IDs,
// UUIDs, times, the number of the test's temporary directory).
var idLike = regexp.MustCompile(`[0-9a-fA-F_-]*[0-9][0-9a-fA-F_-]*`)

// fileShape is f with what differs from run to run blanked out.
func fileShape(f string) string { return idLike.ReplaceAllString(f, "#") }

// transient reports whether f is a file that lives only while a program
// has another one open: SQLite's write-ahead log and shared memory, a
// lock. Whether it is still there when the agent has stopped says how it
// stopped, not what it saved.
func transient(f string) bool {
	if strings.Contains(f, ".lock/") {
		return true // a lock directory (opencode's locks/HASH.lock/heartbeat)
	}
	for _, suf := range []string{"-wal", "-shm", "-journal", ".lock"} {
		if strings.HasSuffix(f, suf) {
			return true
		}
	}
	return false
}
