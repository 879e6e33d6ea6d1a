package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// This file is about the acpterm that travels: a default `go install` on a
// machine with a C compiler links acpterm against libc (through package
// net's cgo resolver), and a target without that libc (a busybox or
// distroless container) cannot run it; nor can a target of another OS or
// architecture run this machine's build. Install then builds a static
// copy of the running acpterm for the target, from the same source, with
// the go command (CGO_ENABLED=0, the target's GOOS and GOARCH), and keeps
// it in acpterm's state directory, keyed by the running executable's
// SHA-256: built once per build of acpterm and platform.
//
// The source is what the running acpterm was built from, and nothing
// else: for a release, its module at the same version from the module
// cache; for a build of a checkout, the checkout, only while no file that
// the static build compiles changed since the executable was written (a
// file's ctime, which no one can set back, against the executable's
// mtime). A checkout can be a workspace that confined commands write; the
// copy runs unconfined on the target, so a changed source is refused,
// not built.

// staticBuildTimeout bounds one static build: a cold build cache on a
// small machine compiles the standard library again without cgo.
const staticBuildTimeout = 5 * time.Minute

// staticRoot is where static copies are kept: acpterm's state directory
// (the parent of sandbox.DefaultCacheDir, which no sandbox of acpterm's
// makes writable as a whole), under static/.
func staticRoot() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) && runtime.GOOS != "windows" {
		return filepath.Join(x, "acpterm", "static"), nil
	}
	if runtime.GOOS == "windows" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "acpterm", "static"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("no home directory to keep a static copy in")
	}
	return filepath.Join(home, ".local", "state", "acpterm", "static"), nil
}

// staticPath is where the static copy of the executable whose SHA-256 is
// exeSum is kept for goos/goarch.
func staticPath(root, exeSum, goos, goarch string) string {
	return filepath.Join(root, exeSum[:16], goos+"-"+goarch, "acpterm")
}

// staticCopies lists the static copies kept for the executable exeSum.
func staticCopies(exeSum string) []string {
	root, err := staticRoot()
	if err != nil || len(exeSum) < 16 {
		return nil
	}
	m, _ := filepath.Glob(filepath.Join(root, exeSum[:16], "*-*", "acpterm"))
	return m
}

// buildSource says how to build the running acpterm again.
type buildSource struct {
	// dir is the module's directory for a build of a checkout, with pkg
	// the main package relative to it ("./cmd/acpterm"); "" for a
	// release, where pkg is path@version.
	dir, pkg string
	// flags are the build's own flags that change the binary (-tags,
	// -trimpath, -ldflags, -gcflags, -asmflags).
	flags []string
}

func (s buildSource) String() string {
	if s.dir != "" {
		return s.dir
	}
	return s.pkg
}

// sourceOf finds the source of the build bi describes. file is the path
// of a source file of this package as compiled in (runtime.Caller):
// absolute unless the build was -trimpath.
func sourceOf(bi *debug.BuildInfo, file string) (buildSource, error) {
	var s buildSource
	if bi == nil || bi.Main.Path == "" || bi.Path == "" {
		return s, errors.New("this executable carries no build information")
	}
	for _, set := range bi.Settings {
		switch set.Key {
		case "-tags", "-ldflags", "-gcflags", "-asmflags":
			s.flags = append(s.flags, set.Key+"="+set.Value)
		case "-trimpath":
			if set.Value == "true" {
				s.flags = append(s.flags, "-trimpath")
			}
		}
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		s.pkg = bi.Path + "@" + v
		return s, nil
	}
	if !filepath.IsAbs(file) {
		return s, errors.New("it was built with -trimpath from a checkout, which it cannot find")
	}
	// The module's directory: the nearest go.mod above this file that
	// names the main module.
	for dir := filepath.Dir(file); ; {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if modulePath(b) != bi.Main.Path {
				return s, fmt.Errorf("%s is not the module %s it was built from", dir, bi.Main.Path)
			}
			rel, ok := strings.CutPrefix(bi.Path, bi.Main.Path)
			if !ok || rel != "" && rel[0] != '/' {
				return s, fmt.Errorf("its main package %s is not in its module %s", bi.Path, bi.Main.Path)
			}
			s.dir, s.pkg = dir, "."+rel
			return s, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return s, fmt.Errorf("the checkout it was built from (%s) is gone", filepath.Dir(file))
		}
		dir = up
	}
}

// modulePath is the module line of a go.mod file.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// goEnv is the environment of the go commands of a static build: the
// target's platform without cgo, no workspace file (one planted above the
// checkout would swap modules) and no toolchain download.
func goEnv(goos, goarch string, extra ...string) []string {
	env := os.Environ()
	env = append(env, "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOWORK=off", "GOTOOLCHAIN=local")
	return append(env, extra...)
}

// maxGoList bounds what the changed-source check reads of go list.
const maxGoList = 16 << 20

// changedSince returns a file of the static build in the checkout that
// changed (its ctime, or that of its directory) after t, or "".
func changedSince(ctx context.Context, goCmd string, s buildSource, goos, goarch string, t time.Time) (string, error) {
	args := []string{"list", "-deps", "-json=Dir,Module,GoFiles,SFiles,EmbedFiles,SysoFiles,HFiles,CFiles,IgnoredGoFiles"}
	args = append(args, s.flags...)
	cmd := exec.CommandContext(ctx, goCmd, append(args, s.pkg)...)
	cmd.Dir, cmd.Env = s.dir, goEnv(goos, goarch)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, n: 4 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	files := []string{filepath.Join(s.dir, "go.mod"), filepath.Join(s.dir, "go.sum")}
	dec := json.NewDecoder(io.LimitReader(out, maxGoList))
	for {
		var p struct {
			Dir    string
			Module *struct{ Main bool }
			GoFiles, SFiles, EmbedFiles, SysoFiles,
			HFiles, CFiles, IgnoredGoFiles []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return "", fmt.Errorf("go list: %v", err)
		}
		if p.Module == nil || !p.Module.Main {
			continue // the standard library and modules from the cache
		}
		files = append(files, p.Dir)
		for _, l := range [][]string{p.GoFiles, p.SFiles, p.EmbedFiles, p.SysoFiles, p.HFiles, p.CFiles} {
			for _, f := range l {
				files = append(files, filepath.Join(p.Dir, f))
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	for _, f := range files {
		c, err := changeTime(f)
		if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(f, "go.sum") {
			continue
		}
		if err != nil {
			return "", err
		}
		if c.After(t) {
			return f, nil
		}
	}
	return "", nil
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// staticCopy returns the static copy of the running executable exe
// (SHA-256 exeSum) for goos/goarch, building it when it is not kept yet,
// and how it was had ("" when kept from before).
func staticCopy(ctx context.Context, exe, exeSum, goos, goarch string) (string, string, error) {
	root, err := staticRoot()
	if err != nil {
		return "", "", err
	}
	out := staticPath(root, exeSum, goos, goarch)
	if _, err := os.Stat(out); err == nil {
		return out, "", nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", "", errors.New("no go command here to build one with")
	}
	bi, _ := debug.ReadBuildInfo()
	_, file, _, _ := runtime.Caller(0)
	src, err := sourceOf(bi, file)
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, staticBuildTimeout)
	defer cancel()
	start := time.Now()
	if src.dir != "" {
		st, err := os.Stat(exe)
		if err != nil {
			return "", "", err
		}
		changed, err := changedSince(ctx, goCmd, src, goos, goarch, st.ModTime())
		if err != nil {
			return "", "", fmt.Errorf("checking %s: %v", src.dir, err)
		}
		if changed != "" {
			return "", "", fmt.Errorf("%s changed after %s was built, so a copy built from it now would not be this acpterm; build acpterm again", changed, exe)
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return "", "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".build-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, "acpterm")
	var cmd *exec.Cmd
	if src.dir != "" {
		cmd = exec.CommandContext(ctx, goCmd, append(append([]string{"build", "-o", built}, src.flags...), src.pkg)...)
		cmd.Dir, cmd.Env = src.dir, goEnv(goos, goarch)
	} else {
		// go install of path@version: into a GOPATH of its own (with the
		// user's module cache), since GOBIN is refused for another
		// platform.
		gomodcache, err := exec.CommandContext(ctx, goCmd, "env", "GOMODCACHE").Output()
		if err != nil {
			return "", "", fmt.Errorf("go env GOMODCACHE: %v", err)
		}
		cmd = exec.CommandContext(ctx, goCmd, append(append([]string{"install"}, src.flags...), src.pkg)...)
		cmd.Dir, cmd.Env = tmp, goEnv(goos, goarch, "GOPATH="+tmp, "GOBIN=", "GOMODCACHE="+strings.TrimSpace(string(gomodcache)))
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &limitedBuffer{b: &stderr, n: 8 << 10}
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("go build of %s for %s/%s: %v: %s", src, goos, goarch, err, strings.TrimSpace(stderr.String()))
	}
	if src.dir == "" {
		built = filepath.Join(tmp, "bin", "acpterm")
		if goos != runtime.GOOS || goarch != runtime.GOARCH {
			built = filepath.Join(tmp, "bin", goos+"_"+goarch, "acpterm")
		}
	}
	info, err := readBinary(built)
	if err != nil || info.platform() != goos+"/"+goarch || info.interp != "" {
		return "", "", fmt.Errorf("the build of %s for %s/%s is not a static executable for it (%+v, %v)", src, goos, goarch, info, err)
	}
	if err := os.Rename(built, out); err != nil {
		return "", "", err
	}
	pruneStatic(root, exeSum)
	return out, fmt.Sprintf("built a static copy for %s/%s from %s in %v", goos, goarch, src, time.Since(start).Round(100*time.Millisecond)), nil
}

// pruneStatic removes the static copies of other builds of acpterm than
// exeSum's: each new build of acpterm makes its own.
func pruneStatic(root, exeSum string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != exeSum[:16] {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// runningLoader returns the running executable and the dynamic loader it
// needs ("" for a static one), when Install would copy it (local "").
func runningLoader(local string) (exe, loader string) {
	if local != "" {
		return "", ""
	}
	exe, err := os.Executable()
	if err != nil {
		return "", ""
	}
	if info, err := readBinary(exe); err == nil {
		loader = info.interp
	}
	return exe, loader
}

// loaderScript prints loader=1 when the target has the dynamic loader.
func loaderScript(loader string) string {
	if loader == "" {
		return ""
	}
	return `if [ -e ` + ShellQuote(loader) + ` ]; then echo loader=1; fi; `
}

// staticLocal is Install's local binary when the running acpterm exe
// cannot run on the target p: its static copy for the target's platform,
// kept from before or built now (in.Built says so). why is pickLocal's
// error, nil when the reason is that the target lacks the dynamic loader.
func staticLocal(ctx context.Context, exe string, sums map[string]copyInfo, p *probe, loader string, why error, in *Installed) (string, binaryInfo, error) {
	reason := why
	if reason == nil {
		reason = fmt.Errorf("%w: %s is dynamically linked and %s has no %s", ErrPlatform, exe, in.Target, loader)
	}
	c, ok := sums[exe]
	if exe == "" || !ok {
		return "", binaryInfo{}, fmt.Errorf("%w, and the running acpterm cannot be read to build a static copy of", reason)
	}
	path, built, err := staticCopy(ctx, exe, c.sum, p.goos, p.goarch)
	if err != nil {
		return "", binaryInfo{}, fmt.Errorf("%w; building a static copy for it: %v (or install acpterm with CGO_ENABLED=0 GOOS=%s GOARCH=%s)", reason, err, p.goos, p.goarch)
	}
	in.Built = built
	if _, ok := sums[path]; !ok {
		if sum, n, err := hashFile(path); err == nil {
			sums[path] = copyInfo{size: n, sum: sum}
		}
	}
	info, err := readBinary(path)
	return path, info, err
}

// beyondDeadline runs f, a local step that ctx's deadline is not meant
// for (it bounds the exchanges with the target), with ctx's cancellation
// but not its deadline, and returns the context for the steps after it:
// ctx's deadline moved on by the time f took.
func beyondDeadline(ctx context.Context, f func(context.Context) error) (context.Context, context.CancelFunc, error) {
	base := context.WithoutCancel(ctx)
	// cancelled is ctx's end by cancellation, not by its deadline.
	follow := func(cancel context.CancelFunc) func() bool {
		return context.AfterFunc(ctx, func() {
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				cancel()
			}
		})
	}
	fctx, fcancel := context.WithCancel(base)
	stop := follow(fcancel)
	start := time.Now()
	err := f(fctx)
	stop()
	fcancel()
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx, func() {}, err
	}
	d, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}, err
	}
	next, cancel := context.WithDeadline(base, d.Add(time.Since(start)))
	stopNext := follow(cancel)
	return next, func() { stopNext(); cancel() }, err
}
