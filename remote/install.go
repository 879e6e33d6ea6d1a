package remote

import (
	"bufio"
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
	"strconv"
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
	// user's home. "" means the target user's cache directory
	// (${XDG_CACHE_HOME:-$HOME/.cache}/acpterm), or, when the user has no
	// home to write in (a container's root with HOME=/),
	// ${TMPDIR:-/tmp}/acpterm-UID, which must be the user's own.
	Dir string
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
	// Local is the local file that was (or would have been) copied, Size
	// its length and SHA256 its hash in hex.
	Local  string
	Size   int64
	SHA256 string
	// Took is how long Install took in all: asking the target, and the
	// copy when it made one.
	Took time.Duration
}

// String says what Install did, for the user: "copied …" or "found …".
func (in *Installed) String() string {
	switch {
	case in.SHA256 == "":
		return fmt.Sprintf("using %s on %s", in.Path, in.Target)
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
// ToolArgs), it asks the target for its OS and architecture (uname -sm)
// and its cache directory, picks the local binary for that platform (see
// InstallOptions.Local), and looks for a copy with the same content
// there. When there is none, it uploads the binary: written to a
// temporary file beside its final place, checked for its size and
// SHA-256 (where the target has sha256sum or shasum), made executable
// and run once (acpterm version), and only then renamed into place, so
// that no half-copied binary is ever run and concurrent installs of the
// same binary do not disturb each other. A non-empty copts.Binary names
// an acpterm already on the target: Install then asks nothing and copies
// nothing.
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
	p, err := probeTarget(ctx, t, copts, opts.Dir)
	if err != nil {
		return nil, err
	}
	in.OS, in.Arch = p.goos, p.goarch
	local, info, err := pickLocal(opts.Local, p.goos, p.goarch)
	if err != nil {
		return nil, err
	}
	in.Local = local
	if in.SHA256, in.Size, err = hashFile(local); err != nil {
		return nil, fmt.Errorf("remote: installing acpterm: %w", err)
	}
	sub := in.SHA256[:16]
	in.Path = p.dir + "/" + sub + "/acpterm"
	if n, ok := p.have[sub]; ok && n == in.Size {
		in.Took = time.Since(start)
		return in, nil
	}
	if err := upload(ctx, t, copts, local, p.dir+"/"+sub, in, info.interp); err != nil {
		return nil, err
	}
	in.Copied = true
	in.Took = time.Since(start)
	return in, nil
}

// probe is what the target said of itself.
type probe struct {
	goos, goarch string
	dir          string           // where the copies are kept
	have         map[string]int64 // copies in dir: hash prefix → size
}

// cacheDirScript sets d to the directory that keeps the copies, creating
// it, or fails. A directory in a shared temp dir must be the user's own
// and no symlink: another user could have made it first.
const cacheDirScript = `if [ -n "$XDG_CACHE_HOME" ]; then d="$XDG_CACHE_HOME/acpterm"; elif [ -n "$HOME" ] && [ "$HOME" != / ]; then d="$HOME/.cache/acpterm"; else d=; fi; ` +
	`if [ -n "$d" ] && mkdir -p "$d" 2>/dev/null && [ -w "$d" ]; then :; else ` +
	`d="${TMPDIR:-/tmp}/acpterm-$(id -u)"; mkdir -m 700 -p "$d" || exit 1; ` +
	`if [ -L "$d" ]; then echo "acpterm: $d is a symlink" >&2; exit 1; fi; ` +
	`if [ -O "$d" ] && [ -d "$d" ] && [ -w "$d" ]; then :; else echo "acpterm: $d is not a directory of this user" >&2; exit 1; fi; fi; `

// probeScript is the first step: the platform, the cache directory and
// the copies in it, as key=value lines. One line of POSIX sh without "!"
// (csh, a possible login shell over ssh, would expand it).
func probeScript(dir string) string {
	var set string
	switch {
	case dir == "":
		set = cacheDirScript
	case dir == "~" || strings.HasPrefix(dir, "~/"):
		set = `d="$HOME"` + ShellQuote(dir[1:]) + `; mkdir -p "$d" || exit 1; `
	default:
		set = `d=` + ShellQuote(dir) + `; mkdir -p "$d" || exit 1; `
	}
	return `u=$(uname -sm) || exit 1; ` + set +
		`d=$(cd "$d" && pwd -P) || exit 1; ` +
		`printf 'uname=%s\ndir=%s\n' "$u" "$d"; ` +
		`for f in "$d"/*/acpterm; do if [ -f "$f" ] && [ -x "$f" ]; then s=${f%/acpterm}; printf 'have=%s %s\n' "${s##*/}" "$(wc -c < "$f")"; fi; done`
}

func probeTarget(ctx context.Context, t Target, copts *CommandOptions, dir string) (*probe, error) {
	if dir != "" && !strings.HasPrefix(dir, "/") && dir != "~" && !strings.HasPrefix(dir, "~/") {
		return nil, fmt.Errorf("remote: install directory %q is neither absolute nor in ~", dir)
	}
	out, err := runOnTarget(ctx, t, copts, probeScript(dir), nil)
	if err != nil {
		return nil, fmt.Errorf("remote: asking %s for its platform: %w", t, err)
	}
	p := &probe{have: map[string]int64{}}
	var uname string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "uname":
			uname = v
		case "dir":
			p.dir = v
		case "have":
			f := strings.Fields(v)
			if len(f) == 2 {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					p.have[f[0]] = n
				}
			}
		}
	}
	p.goos, p.goarch = parseUname(uname)
	if p.goos == "" || !strings.HasPrefix(p.dir, "/") {
		return nil, fmt.Errorf("remote: asking %s for its platform: unexpected answer %q", t, out)
	}
	return p, nil
}

// parseUname turns `uname -sm` ("Linux x86_64", "Darwin arm64") into
// GOOS and GOARCH. A machine it does not know is returned as it is, so
// that the error names it.
func parseUname(s string) (goos, goarch string) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return "", ""
	}
	goos = strings.ToLower(f[0])
	switch m := f[1]; m {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64":
		goarch = "arm64"
	case "i386", "i486", "i586", "i686", "i86pc":
		goarch = "386"
	case "loongarch64":
		goarch = "loong64"
	case "mips64el":
		goarch = "mips64le"
	case "mipsel":
		goarch = "mipsle"
	default:
		// arm (armv6l, armv7l), and the names Go shares with uname:
		// ppc64, ppc64le, riscv64, s390x, mips, mips64.
		goarch = m
		if strings.HasPrefix(m, "armv") {
			goarch = "arm"
		}
	}
	return goos, goarch
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
// temporary file beside its place, check it, run it once, rename it into
// place. The EXIT trap removes the temporary file on every failure, the
// end of stdin before the last byte included.
func uploadScript(dir string, size int64, sum, interp string) string {
	var b strings.Builder
	b.WriteString(`set -e; umask 022; `)
	if interp != "" {
		// A dynamically linked build: fail before the copy, not after.
		fmt.Fprintf(&b, `if [ -e %s ]; then :; else echo "acpterm: this build of acpterm is dynamically linked and the target has no %s: build it with CGO_ENABLED=0" >&2; exit 3; fi; `,
			ShellQuote(interp), interp)
	}
	fmt.Fprintf(&b, `d=%s; mkdir -p "$d"; t="$d/acpterm.tmp.$$"; trap 'rm -f "$t"' EXIT; cat > "$t"; `, ShellQuote(dir))
	fmt.Fprintf(&b, `n=$(wc -c < "$t"); if [ $n -ne %d ]; then echo "acpterm: received $n of %[1]d bytes" >&2; exit 1; fi; `, size)
	fmt.Fprintf(&b, `if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum < "$t"); elif command -v shasum >/dev/null 2>&1; then h=$(shasum -a 256 < "$t"); else h=%s; fi; h=${h%%%% *}; `, sum)
	fmt.Fprintf(&b, `if [ "$h" = %s ]; then :; else echo "acpterm: received a copy whose sha256 is $h" >&2; exit 1; fi; `, sum)
	b.WriteString(`chmod 755 "$t"; if v=$("$t" version 2>&1); then :; else echo "acpterm: the copy does not run on the target: $v" >&2; exit 1; fi; `)
	b.WriteString(`mv -f "$t" "$d/acpterm"; trap - EXIT; `)
	// Copies of other builds not copied for staleDays are removed: each
	// is 10 MB or so, and every new build of acpterm leaves one. This
	// one's directory has just changed, as has one being copied now; a
	// copy still running keeps its file (Unix unlinks); symlinks are not
	// followed (-type d). A find that cannot do this changes nothing.
	fmt.Fprintf(&b, `find "${d%%/*}" -mindepth 1 -maxdepth 1 -type d -mtime +%d -exec rm -rf {} \; 2>/dev/null || :; `, staleDays)
	b.WriteString(`echo "ok $v"`)
	return b.String()
}

// staleDays is how long a copy of another build is kept in the target's
// cache directory after it was copied there.
const staleDays = 30

func upload(ctx context.Context, t Target, copts *CommandOptions, local, dir string, in *Installed, interp string) error {
	f, err := os.Open(local)
	if err != nil {
		return fmt.Errorf("remote: installing acpterm: %w", err)
	}
	defer f.Close()
	out, err := runOnTarget(ctx, t, copts, uploadScript(dir, in.Size, in.SHA256, interp), f)
	if err != nil {
		// The script's exit 3 is its refusal of a dynamic build. Its
		// message may not come back: the transport can end on the broken
		// stdin (the script never reads the binary) before it relays
		// the script's stderr.
		var ee *exec.ExitError
		if interp != "" && (strings.Contains(err.Error(), "dynamically linked") || errors.As(err, &ee) && ee.ExitCode() == 3) {
			return fmt.Errorf("%w: %s is dynamically linked and %s has no %s: build it with CGO_ENABLED=0", ErrPlatform, local, t, interp)
		}
		return fmt.Errorf("remote: copying acpterm to %s: %w", t, err)
	}
	if !strings.HasPrefix(lastLine(out), "ok acpterm ") {
		return fmt.Errorf("remote: copying acpterm to %s: unexpected answer %q", t, out)
	}
	return nil
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
