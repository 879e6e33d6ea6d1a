package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plantPackage writes, in ws/node_modules, a package named like claude's
// agent whose program writes marker: what a sandboxed command of an
// earlier run could leave there.
func plantPackage(t *testing.T, ws, marker string) {
	t.Helper()
	pkg := filepath.Join(ws, "node_modules", "@agentclientprotocol", "claude-agent-acp")
	bin := filepath.Join(ws, "node_modules", ".bin")
	for _, d := range []string{pkg, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(pkg, "package.json"): `{"name": "@agentclientprotocol/claude-agent-acp", "version": "9.9.9", "bin": {"claude-agent-acp": "run.sh"}}`,
		filepath.Join(pkg, "run.sh"):       "#!/bin/sh\necho planted > " + marker + "\n",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../@agentclientprotocol/claude-agent-acp/run.sh", filepath.Join(bin, "claude-agent-acp")); err != nil {
		t.Fatal(err)
	}
}

// TestNpxOutsideWorkspace: a named agent resolved to npx starts with a
// working directory outside the workspace, so that npx cannot take a
// package planted in the workspace's node_modules. A fake npx records the
// directory it gets.
func TestNpxOutsideWorkspace(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	plantPackage(t, ws, filepath.Join(t.TempDir(), "marker"))
	bin := t.TempDir()
	// To stderr, which acpterm passes on: the agent may be sandboxed.
	script := "#!/bin/sh\necho \"npx-cwd=$(pwd -P)\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + "/usr/bin:/bin", "XDG_STATE_HOME=" + state}
	r := acpterm(t, opts{plain: true, env: env, dir: ws}, "run", "-p", "hi", "claude")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (the fake npx exits 1)\nstderr:\n%s", r.code, r.stderr)
	}
	_, after, ok := strings.Cut(r.stderr, "npx-cwd=")
	if !ok {
		t.Fatalf("the fake npx did not run\nstderr:\n%s", r.stderr)
	}
	got, _, _ := strings.Cut(after, "\n")
	realWS, _ := filepath.EvalSymlinks(ws)
	if got == realWS || strings.HasPrefix(got, realWS+"/") {
		t.Errorf("npx started in %s, inside the workspace %s", got, realWS)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(state, "acpterm", "npx"))
	if got != want {
		t.Errorf("npx started in %s, want acpterm's state directory's %s", got, want)
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the npx directory: %v, %v; want mode 0700", fi, err)
	}
}

// TestNpxPlantedPackageNotRun is the same with the real npx, offline and
// with an empty cache: from the workspace it runs the planted package (the
// control), started by acpterm it does not.
func TestNpxPlantedPackageNotRun(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed")
	}
	t.Parallel()
	ws := t.TempDir()
	marker := filepath.Join(t.TempDir(), "marker")
	plantPackage(t, ws, marker)
	npmEnv := []string{"npm_config_cache=" + t.TempDir(), "npm_config_offline=true", "npm_config_update_notifier=false"}

	// The control shows that npx itself would run the planted package; it
	// is a fact about npx, not acpterm, and costs a second of node, so the
	// -short run trusts it.
	if !testing.Short() {
		control := exec.Command(npx, "-y", "@agentclientprotocol/claude-agent-acp")
		control.Dir = ws
		control.Env = append(os.Environ(), npmEnv...)
		if out, err := control.CombinedOutput(); err != nil {
			t.Fatalf("control: npx in the workspace: %v\n%s", err, out)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("control: npx in the workspace did not run the planted package: %v", err)
		}
		if err := os.Remove(marker); err != nil {
			t.Fatal(err)
		}
	}

	// Only npx's own directory on PATH: claude-agent-acp is not installed.
	env := append([]string{"PATH=" + filepath.Dir(npx) + string(os.PathListSeparator) + "/usr/bin:/bin", "XDG_STATE_HOME=" + t.TempDir()}, npmEnv...)
	// Unconfined, so that nothing but where npx starts keeps the planted
	// program from writing the marker.
	r := acpterm(t, opts{plain: true, env: env, dir: ws}, "run", "--sandbox-agent=false", "-p", "hi", "claude")
	if r.code == 0 {
		t.Errorf("exit 0: something answered as the agent\nstdout:\n%s", r.stdout)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("acpterm run claude ran the package planted in the workspace's node_modules\nstderr:\n%s", r.stderr)
	}
}
