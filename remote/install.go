package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// InstallOptions configure Install. A nil *InstallOptions or zero fields
// mean the defaults.
type InstallOptions struct {
	// Local is the acpterm executable to copy. "" means the one for the
	// target's OS and architecture: acpterm-GOOS-GOARCH beside the running
	// executable when there is such a file (a static build kept for
	// targets without libc, or a build for another architecture), else the
	// running executable itself when the target's platform is this one.
	Local string
	// Dir is the directory on the target that keeps the copies, one
	// subdirectory per content hash; "~" or "~/..." is in the target
	// user's home. "" means ${XDG_DATA_HOME:-$HOME/.local/share}/acpterm/exec-server,
	// or, when the user has no home to write in (a container's root with
	// HOME=/) or that lies where commands may write (see Writable),
	// ${TMPDIR:-/tmp}/acpterm-UID, which must be the user's own.
	//
	// The copy is what runs unconfined there, so it is never kept where
	// a command confined by the exec server could replace it: not in the
	// target's directory (Target.Dir, or where the transport starts when
	// it names none), nor in Writable, nor in the caches a workspace-write
	// sandbox lets commands write: their own (sandbox.DefaultCacheDir,
	// ${XDG_STATE_HOME:-~/.local/state}/acpterm/sandbox-cache) and, for an
	// exec server of an older acpterm or a policy with Caches, the user's
	// (the user's cache directory, the Go, npm, pip and cargo caches,
	// sandbox.DefaultCaches).
	// The data directory is the XDG place for files a program installs
	// for the user and that no sandbox of acpterm's lets commands write.
	// A Dir that lies in one of those is refused.
	Dir string
	// Writable are the other directories on the target that the exec
	// server will let commands write (its --writable flags).
	Writable []string
}

// Installed says what Install found on the target and what it did.
type Installed struct {
	// Path is the acpterm executable on the target, for
	// CommandOptions.Binary.
	Path string
	// Target is where, in ParseTarget's grammar.
	Target string
	// OS and Arch are the target's platform as GOOS and GOARCH; "" when
	// CommandOptions.Binary named the executable and nothing was asked.
	OS   string
	Arch string
	// Copied reports that Install uploaded the binary; false when a copy
	// with the same content was in place already (or Binary named one).
	Copied bool
	// Replaced, when set, says why the copy that was in place was
	// replaced: its content was not what acpterm had copied.
	Replaced string
	// Transient: the target has no trusted tool to check a copy's
	// SHA-256 with, so Install copied the binary into a fresh private
	// directory for this one run, to be removed when it ends
	// (CommandOptions.Transient).
	Transient bool
	// Local is the local file that was (or would have been) copied, Size
	// its length and SHA256 its hash in hex.
	Local  string
	Size   int64
	SHA256 string
	// Built, when set, says that Local is a static copy of the running
	// acpterm, built for the target because this one cannot run there,
	// and how long that took.
	Built string
	// Took is how long Install took in all: asking the target, and the
	// copy when it made one.
	Took time.Duration
}

// String says what Install did, for the user: "copied …" or "found …".
func (in *Installed) String() string {
	if in.Built != "" {
		return in.Built + "; " + in.did()
	}
	return in.did()
}

func (in *Installed) did() string {
	switch {
	case in.SHA256 == "":
		return fmt.Sprintf("using %s on %s", in.Path, in.Target)
	case in.Replaced != "":
		return fmt.Sprintf("replaced %s on %s: %s; copied %s (%.1f MB) in %v", in.Path, in.Target, in.Replaced, in.Local, float64(in.Size)/1e6, in.Took.Round(time.Millisecond))
	case in.Transient:
		return fmt.Sprintf("copied %s (%.1f MB) to %s as %s for this run only (the target has no sha256sum to check a kept copy with) in %v", in.Local, float64(in.Size)/1e6, in.Target, in.Path, in.Took.Round(time.Millisecond))
	case in.Copied:
		return fmt.Sprintf("copied %s (%.1f MB) to %s as %s in %v", in.Local, float64(in.Size)/1e6, in.Target, in.Path, in.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("found %s on %s, the same as %s", in.Path, in.Target, in.Local)
}

// ErrPlatform is wrapped by Install's error when no local acpterm can run
// on the target: another OS or architecture, or a dynamically linked
// build where the target lacks its dynamic loader.
var ErrPlatform = errors.New("remote: no acpterm here runs on the target")

// maxProbeOutput bounds what Install reads of its own scripts' output on
// the target.
const maxProbeOutput = 64 << 10

// Install makes sure the target has this acpterm and returns the path to
// run there. Over the same transport that Command uses (copts' Tool and
// ToolArgs), it asks the target for its OS and architecture (uname -sm),
// the directory that keeps the copies (see InstallOptions.Dir) and the
// SHA-256 of each copy there, picks the local binary for that platform
// (see InstallOptions.Local), and uses the copy whose full SHA-256 is the
// binary's. A copy whose content differs is replaced, and Installed.Replaced
// says so. Otherwise it uploads the binary: written to a temporary file
// beside its final place, checked for its size and SHA-256, made
// executable (by its owner only) and run once (acpterm version), and only
// then renamed into place, so that no half-copied binary is ever run and
// concurrent installs of the same binary do not disturb each other. Run
// the copy with CommandOptions.SHA256 set to Installed.SHA256 (Installed.Options
// does it): the target checks it again each time before it runs it.
//
// The hash is taken with the system's own tool (sha256sum, shasum or
// busybox, by absolute path: a program found in PATH could be one a
// command planted). A target with none gets a fresh copy for each run
// instead (Installed.Transient), in a private directory removed when the
// run ends: a copy that cannot be checked is never run twice.
//
// A non-empty copts.Binary names an acpterm already on the target:
// Install then asks nothing and copies nothing.
//
// The target needs a POSIX shell with cat, wc, mkdir, chmod, mv and
// uname: busybox will do. Each step is one run of the transport (a
// podman exec, an ssh session), so Install costs two of them when it
// copies and one when it does not.
func Install(ctx context.Context, t Target, copts *CommandOptions, opts *InstallOptions) (*Installed, error) {
	if copts == nil {
		copts = &CommandOptions{}
	}
	if opts == nil {
		opts = &InstallOptions{}
	}
	in := &Installed{Target: t.String()}
	if copts.Binary != "" {
		in.Path = copts.Binary
		return in, nil
	}
	start := time.Now()
	// The local binaries Install may pick are hashed first: the target
	// then hashes only the copies that could be one of them.
	sums := localSums(opts.Local)
	exe, loader := runningLoader(opts.Local)
	p, err := probeTarget(ctx, t, copts, opts, sums, loader)
	if err != nil {
		return nil, err
	}
	in.OS, in.Arch = p.goos, p.goarch
	local, info, err := pickLocal(opts.Local, p.goos, p.goarch)
	if opts.Local == "" && (errors.Is(err, ErrPlatform) || err == nil && info.interp != "" && !p.loader) {
		// This acpterm cannot run there: a static copy of it can.
		// The build is this machine's work, not the target's: ctx's
		// deadline does not count its time.
		why, interp := err, info.interp
		var cancel context.CancelFunc
		ctx, cancel, err = beyondDeadline(ctx, func(ctx context.Context) error {
			local, info, err = staticLocal(ctx, exe, sums, p, interp, why, in)
			return err
		})
		defer cancel()
	}
	if err != nil {
		return nil, err
	}
	in.Local = local
	if c, ok := sums[local]; ok {
		in.SHA256, in.Size = c.sum, c.size
	} else if in.SHA256, in.Size, err = hashFile(local); err != nil {
		return nil, fmt.Errorf("remote: installing acpterm: %w", err)
	}
	sub := in.SHA256[:16]
	in.Path = p.dir + "/" + sub + "/acpterm"
	dir := p.dir + "/" + sub
	switch c, ok := p.have[sub]; {
	case !p.hashes:
		in.Transient = true
		dir = ""
	case ok && c.size == in.Size && c.sum == in.SHA256:
		in.Took = time.Since(start)
		return in, nil
	case ok && c.sum == "":
		in.Replaced = "its sha256 could not be taken there"
	case ok:
		in.Replaced = fmt.Sprintf("it was not the copy acpterm made (its sha256 is %s, not %s)", c.sum, in.SHA256)
	}
	path, err := upload(ctx, t, copts, local, p.dir, dir, in, info.interp)
	if err != nil {
		return nil, err
	}
	in.Path = path
	in.Copied = true
	in.Took = time.Since(start)
	return in, nil
}

// Options returns copts for running the exec server (Command) or an agent
// host (AgentCommand) from the copy: Binary is its path, and the target
// checks its SHA-256 before it runs it, or removes a transient copy once
// it has run.
func (in *Installed) Options(copts CommandOptions) *CommandOptions {
	copts.Binary = in.Path
	copts.Transient = in.Transient
	if !in.Transient {
		copts.SHA256 = in.SHA256
	}
	return &copts
}

// pickLocal chooses the local binary for the target's platform.
func pickLocal(local, goos, goarch string) (string, binaryInfo, error) {
	want := goos + "/" + goarch
	if local != "" {
		info, err := readBinary(local)
		if err != nil {
			return "", info, fmt.Errorf("remote: installing acpterm: %w", err)
		}
		if info.platform() != want {
			return "", info, fmt.Errorf("%w: %s is built for %s and the target is %s", ErrPlatform, local, info.platform(), want)
		}
		return local, info, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", binaryInfo{}, fmt.Errorf("remote: installing acpterm: the running executable: %w", err)
	}
	sibling := filepath.Join(filepath.Dir(exe), "acpterm-"+goos+"-"+goarch)
	if _, err := os.Stat(sibling); err == nil {
		return pickLocal(sibling, goos, goarch)
	}
	if want != runtime.GOOS+"/"+runtime.GOARCH {
		return "", binaryInfo{}, fmt.Errorf("%w: the target is %s and this acpterm is %s/%s: put one built for it at %s "+
			"(GOOS=%s GOARCH=%s CGO_ENABLED=0 go build -o %[3]s ./cmd/acpterm), or name one already on the target",
			ErrPlatform, want, runtime.GOOS, runtime.GOARCH, sibling, goos, goarch)
	}
	info, err := readBinary(exe)
	if err != nil {
		// The running executable is for this platform whatever its
		// format says; only a dynamic loader would be missed.
		info = binaryInfo{goos: runtime.GOOS, goarch: runtime.GOARCH}
	}
	return exe, info, nil
}

// localSums hashes the local binaries that pickLocal may choose: local,
// or the running executable and its acpterm-GOOS-GOARCH siblings. One
// that cannot be read is left out (pickLocal says why, if it is chosen).
func localSums(local string) map[string]copyInfo {
	var paths []string
	if local != "" {
		paths = []string{local}
	} else if exe, err := os.Executable(); err == nil {
		sib, _ := filepath.Glob(filepath.Join(filepath.Dir(exe), "acpterm-*-*"))
		paths = append([]string{exe}, sib...)
	}
	sums := map[string]copyInfo{}
	for _, p := range paths {
		if sum, n, err := hashFile(p); err == nil {
			sums[p] = copyInfo{size: n, sum: sum}
		}
	}
	if exe := paths; local == "" && len(exe) > 0 {
		// The static copies of the running acpterm made before.
		if c, ok := sums[exe[0]]; ok {
			for _, p := range staticCopies(c.sum) {
				if sum, n, err := hashFile(p); err == nil {
					sums[p] = copyInfo{size: n, sum: sum}
				}
			}
		}
	}
	return sums
}

// hashFile returns the SHA-256 (hex) and size of a file.
func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// uploadScript is the second step: read the binary from stdin into a
// temporary file beside its place (dir, or with transient a fresh private
// directory in base), check it, run it once, rename it into place. The
// EXIT trap removes the temporary file on every failure, the end of stdin
// before the last byte included. Its last lines are the copy's path and
// "ok" with the version.
func uploadScript(base, dir string, size int64, sum, interp string) string {
	var b strings.Builder
	b.WriteString(`set -e; umask 077; `)
	if interp != "" {
		// A dynamically linked build: fail before the copy, not after.
		fmt.Fprintf(&b, `if [ -e %s ]; then :; else echo "acpterm: this build of acpterm is dynamically linked and the target has no %s: build it with CGO_ENABLED=0" >&2; exit 3; fi; `,
			ShellQuote(interp), interp)
	}
	b.WriteString(hashToolScript)
	if dir == "" {
		// No tool to check a kept copy with: a fresh directory, only
		// this run's, that the exec server's wrapper removes.
		fmt.Fprintf(&b, `d=$(mktemp -d %s); `, ShellQuote(base+"/run.XXXXXXXXXX"))
	} else {
		// Whatever is in the copy's place goes (a symlink is removed,
		// not followed).
		fmt.Fprintf(&b, `d=%s; if [ -L "$d" ]; then rm -f "$d"; fi; mkdir -p -m 700 "$d"; chmod 700 "$d"; `, ShellQuote(dir))
	}
	b.WriteString(`t="$d/acpterm.tmp.$$"; trap 'rm -f "$t"' EXIT; cat > "$t"; `)
	fmt.Fprintf(&b, `n=$(wc -c < "$t"); if [ $n -ne %d ]; then echo "acpterm: received $n of %[1]d bytes" >&2; exit 1; fi; `, size)
	fmt.Fprintf(&b, `if [ -n "$hs" ]; then h=$($hs < "$t"); h=${h%%%% *}; if [ "$h" = %s ]; then :; else echo "acpterm: received a copy whose sha256 is $h" >&2; exit 1; fi; fi; `, sum)
	b.WriteString(`chmod 500 "$t"; if v=$("$t" version 2>&1); then :; else echo "acpterm: the copy does not run on the target: $v" >&2; exit 1; fi; `)
	b.WriteString(`if [ -d "$d/acpterm" ]; then rm -rf "$d/acpterm"; fi; mv -f "$t" "$d/acpterm"; trap - EXIT; `)
	// Copies of other builds not copied for staleDays are removed: each
	// is 10 MB or so, and every new build of acpterm leaves one. This
	// one's directory has just changed, as has one being copied now; a
	// copy still running keeps its file (Unix unlinks); symlinks are not
	// followed (-type d). A find that cannot do this changes nothing.
	fmt.Fprintf(&b, `find "${d%%/*}" -mindepth 1 -maxdepth 1 -type d -mtime +%d -exec rm -rf {} \; 2>/dev/null || :; `, staleDays)
	b.WriteString(`printf 'path=%s\n' "$d/acpterm"; echo "ok $v"`)
	return b.String()
}

// staleDays is how long a copy of another build is kept in the target's
// directory of copies after it was copied there.
const staleDays = 30

// upload copies local to the target, into dir, or for a transient copy
// (dir "") into a fresh directory in base, and returns its path there.
func upload(ctx context.Context, t Target, copts *CommandOptions, local, base, dir string, in *Installed, interp string) (string, error) {
	f, err := os.Open(local)
	if err != nil {
		return "", fmt.Errorf("remote: installing acpterm: %w", err)
	}
	defer f.Close()
	out, err := runOnTarget(ctx, t, copts, uploadScript(base, dir, in.Size, in.SHA256, interp), f)
	if err != nil {
		// The script's exit 3 is its refusal of a dynamic build. Its
		// message may not come back: the transport can end on the broken
		// stdin (the script never reads the binary) before it relays
		// the script's stderr.
		var ee *exec.ExitError
		if interp != "" && (strings.Contains(err.Error(), "dynamically linked") || errors.As(err, &ee) && ee.ExitCode() == 3) {
			return "", fmt.Errorf("%w: %s is dynamically linked and %s has no %s: build it with CGO_ENABLED=0", ErrPlatform, local, t, interp)
		}
		return "", fmt.Errorf("remote: copying acpterm to %s: %w", t, err)
	}
	out = strings.TrimRight(out, "\n")
	last := lastLine(out)
	path, ok := strings.CutPrefix(lastLine(strings.TrimSuffix(out, last)), "path=")
	if !strings.HasPrefix(last, "ok acpterm ") || !ok || !strings.HasPrefix(path, base+"/") || !printable(path) {
		return "", fmt.Errorf("remote: copying acpterm to %s: unexpected answer %q", t, clip(out, 512))
	}
	return path, nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// runOnTarget runs a one-line sh script on the target through the
// transport, with stdin from r (nil: empty), and returns its stdout. A
// failure carries the end of the transport's stderr: the script's own
// message, or ssh's and podman's.
func runOnTarget(ctx context.Context, t Target, copts *CommandOptions, script string, r io.Reader) (string, error) {
	argv, err := transportArgv(t, copts, []string{"/bin/sh", "-c", script})
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = r
	stdout := &tailWriter{max: maxProbeOutput}
	stderr := &tailWriter{max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if msg := bytes.TrimSpace([]byte(stderr.String())); len(msg) > 0 {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return stdout.String(), nil
}
