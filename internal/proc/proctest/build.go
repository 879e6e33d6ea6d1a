package proctest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// GoBuild builds a program that tests run, with `go ARGS`, ARGS being a
// build command without its -o: "build", "-race", "github.com/acpterm/acpterm/cmd/acpterm",
// or "test", "-c", PKG for a test binary. It returns the program's path in
// dir, the caller's own temporary directory, under name.
//
// Linking is most of what such a build costs once the build cache is warm
// (2 s for acpterm here, 7 s for its test binary on a busy machine), and
// the go command links again only what changed when the output is already
// where it last put it: so the output stays, between runs and across the
// packages that build the same program, in a directory of the user's under
// os.TempDir(), keyed by the module and ARGS (so ARGS should name packages
// by import path, not "."). What is returned is a hard link to it, or a
// copy: a later build, by this run or another one, replaces the shared
// file and leaves the caller's as it was. Where the shared directory cannot
// be had (not ours, not private), it builds straight into dir.
func GoBuild(dir, name string, args ...string) (string, error) {
	return GoBuildEnv(dir, name, nil, args...)
}

// GoBuildEnv is GoBuild with env (NAME=VALUE entries, CGO_ENABLED=0 for a
// static build) added to the go command's environment, and to the key of
// the shared output.
func GoBuildEnv(dir, name string, env []string, args ...string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("proctest: GoBuild without a go command")
	}
	out := filepath.Join(dir, name)
	if shared, ok := sharedBuildDir(append(slices.Clone(env), args...)); ok {
		// One build at a time across the test processes: two go
		// commands started together each compile what the other is
		// compiling (on a cold cache, acpterm and its test binary built
		// at once took 84 s of CPU, one after the other 54 s). The one
		// that waits finds the packages in the cache.
		unlock, err := lockBuilds(filepath.Join(filepath.Dir(shared), "lock"))
		if err != nil {
			return "", fmt.Errorf("proctest: the lock of the shared builds: %v", err)
		}
		defer unlock()
		cached := filepath.Join(shared, name)
		if err := goBuild(cached, env, args); err != nil {
			return "", err
		}
		if err := linkOrCopy(cached, out); err != nil {
			return "", err
		}
		return out, nil
	}
	return out, goBuild(out, env, args)
}

func goBuild(out string, env, args []string) error {
	cmdArgs := append([]string{args[0], "-o", out}, args[1:]...)
	cmd := exec.Command("go", cmdArgs...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		line := strings.Join(append(append(slices.Clone(env), "go"), cmdArgs...), " ")
		return fmt.Errorf("%s: %v\n%s", line, err, b)
	}
	return nil
}

// sharedBuildDir is the kept directory for a build with args in the
// module around the working directory, made if need be. It must be a
// directory of mode 0700: one that someone else made first, open to
// others, is not used.
func sharedBuildDir(args []string) (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	mod := wd
	for {
		if _, err := os.Stat(filepath.Join(mod, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(mod)
		if parent == mod {
			return "", false
		}
		mod = parent
	}
	key := sha256.Sum256([]byte(strings.Join(append([]string{mod, runtime.GOOS, runtime.GOARCH}, args...), "\x00")))
	root := filepath.Join(os.TempDir(), "acpterm-gobuild-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", false
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700) {
		return "", false
	}
	d := filepath.Join(root, hex.EncodeToString(key[:8]))
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", false
	}
	return d, true
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}
