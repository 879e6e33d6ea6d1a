package remote

// What Install asks the target first, and how it reads the answer: the
// probe script and its parser.

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// probe is what the target said of itself.
type probe struct {
	goos, goarch string
	dir          string              // where the copies are kept
	hashes       bool                // the target has a trusted SHA-256 tool
	have         map[string]copyInfo // copies in dir, by hash prefix
	loader       bool                // the running acpterm's dynamic loader is there
}

// copyInfo is one copy on the target: its size and full SHA-256 ("" when
// unknown).
type copyInfo struct {
	size int64
	sum  string
}

// hashToolScript sets hs to the system's SHA-256 tool, by absolute path,
// or to "" when there is none.
const hashToolScript = `hs=; for x in /usr/bin/sha256sum /bin/sha256sum /sbin/sha256sum /usr/sbin/sha256sum /run/current-system/sw/bin/sha256sum; do if [ -x "$x" ]; then hs=$x; break; fi; done; ` +
	`if [ -z "$hs" ]; then for x in /usr/bin/shasum /bin/shasum; do if [ -x "$x" ]; then hs="$x -a 256"; break; fi; done; fi; ` +
	`if [ -z "$hs" ]; then for x in /bin/busybox /usr/bin/busybox; do if [ -x "$x" ] && "$x" sha256sum </dev/null >/dev/null 2>&1; then hs="$x sha256sum"; break; fi; done; fi; `

// avoidScript defines under, which tells whether $1 lies in a directory
// in which commands confined by an exec server may write (then named by
// w): the commands' own caches (sandbox.DefaultCacheDir), what
// sandbox.DefaultWritable lists (the user's caches, which older exec
// servers let commands write), the server's cwd (the target's
// directory, or where the transport starts) and its --writable, each
// resolved where it exists.
func avoidScript(t Target, writable []string) string {
	var b strings.Builder
	// Where the transport starts counts unless it is /: an exec server
	// started there refuses to run, as its own executable would be in
	// its writable set, and a target named with a directory may still
	// use a copy in /tmp.
	b.WriteString(`s0=$(pwd -P); if [ "$s0" = / ]; then s0=; fi; sc=${XDG_STATE_HOME:-${HOME:+$HOME/.local/state}}; sc=${sc:+$sc/acpterm/sandbox-cache}; under() { w=; for uv in "$sc" "$XDG_CACHE_HOME" "$GOCACHE" "$GOMODCACHE" "$npm_config_cache" "$PIP_CACHE_DIR" "$CARGO_HOME" ` +
		`"${GOPATH:+${GOPATH%%:*}/pkg/mod}" "${HOME:+$HOME/.cache}" "${HOME:+$HOME/Library/Caches}" "${HOME:+$HOME/.npm}" "${HOME:+$HOME/.cargo}" "${HOME:+$HOME/go/pkg/mod}" `)
	dirs := append([]string{t.Dir}, writable...)
	for i, w := range dirs {
		switch {
		case i == 0 && t.Dir == "":
			b.WriteString(`"$s0" `)
		case w == "~" || strings.HasPrefix(w, "~/"):
			b.WriteString(`"$HOME"` + ShellQuote(w[1:]) + ` `)
		case strings.HasPrefix(w, "/"):
			b.WriteString(ShellQuote(w) + ` `)
		}
	}
	b.WriteString(`; do if [ -n "$uv" ]; then ur=$(cd "$uv" 2>/dev/null && pwd -P) || ur=$uv; ur=${ur%/}; case "$1/" in "$ur"/*) w=${ur:-/}; return 0;; esac; fi; done; return 1; }; `)
	return b.String()
}

// installDirScript sets d to the directory that keeps the copies,
// creating it private to the user, or fails. A directory in a shared
// temp dir must be the user's own and no symlink: another user could
// have made it first.
const installDirScript = `d=; if [ -n "$HOME" ] && [ "$HOME" != / ]; then x="${XDG_DATA_HOME:-$HOME/.local/share}/acpterm/exec-server"; if under "$x"; then :; elif mkdir -p "$x" 2>/dev/null && [ -w "$x" ]; then d=$x; fi; fi; ` +
	`if [ -z "$d" ]; then d="${TMPDIR:-/tmp}/acpterm-$(id -u)"; ` +
	`if under "$d"; then echo "acpterm: found no directory for acpterm's copies where commands confined there cannot write ($d is in $w): name one with --remote-install-dir" >&2; exit 1; fi; ` +
	`mkdir -m 700 -p "$d" || exit 1; fi; `

// probeScript is the first step: the platform, the directory of the
// copies, whether the target can hash, and the copies there with their
// size and SHA-256, as key=value lines. One line of POSIX sh without "!"
// (csh, a possible login shell over ssh, would expand it).
func probeScript(t Target, opts *InstallOptions, want []string, loader string) string {
	var set string
	switch dir := opts.Dir; {
	case dir == "":
		set = installDirScript
	case dir == "~" || strings.HasPrefix(dir, "~/"):
		set = `d="$HOME"` + ShellQuote(dir[1:]) + `; `
	default:
		set = `d=` + ShellQuote(dir) + `; `
	}
	if opts.Dir != "" {
		// Refused before it is made, as well as after (a symlink).
		set += `if under "$d"; then echo "acpterm: $d, the directory of acpterm's copies, lies in $w, where commands confined there may write" >&2; exit 1; fi; mkdir -p "$d" || exit 1; `
	}
	return `u=$(uname -sm) || exit 1; umask 077; ` + hashToolScript + avoidScript(t, opts.Writable) + set +
		`if [ -L "$d" ]; then echo "acpterm: $d is a symlink" >&2; exit 1; fi; ` +
		`if [ -O "$d" ] && [ -d "$d" ] && [ -w "$d" ]; then :; else echo "acpterm: $d is not a directory of this user" >&2; exit 1; fi; ` +
		`chmod 700 "$d" || exit 1; d=$(cd "$d" && pwd -P) || exit 1; ` +
		`if under "$d"; then echo "acpterm: $d, the directory of acpterm's copies, lies in $w, where commands confined there may write" >&2; exit 1; fi; ` +
		`printf 'uname=%s\ndir=%s\nhash=%s\n' "$u" "$d" "$hs"; n=0; ` + loaderScript(loader) +
		`W=' ` + strings.Join(want, " ") + ` '; ` +
		`for f in "$d"/*/acpterm; do if [ -f "$f" ] && [ $n -lt ` + strconv.Itoa(maxCopies) + ` ]; then n=$((n+1)); s=${f%/acpterm}; s=${s##*/}; h=-; ` +
		`case "$W" in *" $s "*) if [ -n "$hs" ]; then h=$($hs < "$f") || h=-; h=${h%% *}; fi;; esac; printf 'have=%s %s %s\n' "$s" "$(wc -c < "$f")" "$h"; fi; done`
}

// maxCopies bounds the copies the probe lists and hashes.
const maxCopies = 32

func probeTarget(ctx context.Context, t Target, copts *CommandOptions, opts *InstallOptions, sums map[string]copyInfo, loader string) (*probe, error) {
	if dir := opts.Dir; dir != "" && !strings.HasPrefix(dir, "/") && dir != "~" && !strings.HasPrefix(dir, "~/") {
		return nil, fmt.Errorf("remote: install directory %q is neither absolute nor in ~", dir)
	}
	var want []string
	for _, c := range sums {
		want = append(want, c.sum[:16])
	}
	out, err := runOnTarget(ctx, t, copts, probeScript(t, opts, want, loader), nil)
	if err != nil {
		return nil, fmt.Errorf("remote: asking %s for its platform: %w", t, err)
	}
	p, err := parseProbe(out)
	if err != nil {
		return nil, fmt.Errorf("remote: asking %s for its platform: %w", t, err)
	}
	return p, nil
}

// Bounds of what parseProbe reads.
const (
	maxProbeLines = 256
	maxProbeLine  = 4096
)

// parseProbe reads the probe's answer defensively: only its own lines
// count (a shell start-up file may have printed others first, which are
// skipped), each of uname, dir and hash at most once, and a copy only
// with a name of 16 hex digits, a size and a full SHA-256 or "-". What
// does not fit is ignored, or is an error when it is one of the three.
func parseProbe(out string) (*probe, error) {
	p := &probe{have: map[string]copyInfo{}}
	var uname string
	seen := map[string]bool{}
	lines := strings.Split(out, "\n")
	if len(lines) > maxProbeLines {
		return nil, fmt.Errorf("unexpected answer: %d lines", len(lines))
	}
	for _, line := range lines {
		if len(line) > maxProbeLine || !printable(line) {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "uname", "dir", "hash":
			if seen[k] {
				return nil, fmt.Errorf("unexpected answer: %s given twice", k)
			}
			seen[k] = true
		}
		switch k {
		case "uname":
			uname = v
		case "dir":
			if !strings.HasPrefix(v, "/") || path.Clean(v) != v {
				return nil, fmt.Errorf("unexpected answer: directory %q", v)
			}
			p.dir = v
		case "hash":
			p.hashes = v != ""
		case "loader":
			p.loader = v == "1"
		case "have":
			if name, c, ok := parseHave(v); ok && len(p.have) < maxCopies {
				p.have[name] = c
			}
		}
	}
	p.goos, p.goarch = parseUname(uname)
	if p.goos == "" || p.dir == "" || !seen["hash"] {
		return nil, fmt.Errorf("unexpected answer %q", clip(out, 512))
	}
	return p, nil
}

// parseHave reads a have= line's value: a copy's name (16 hex digits),
// its size and its SHA-256 or "-"; ok is false for anything else.
func parseHave(v string) (name string, c copyInfo, ok bool) {
	f := strings.Split(v, " ")
	if len(f) != 3 || !isHex(f[0], 16) || f[2] != "-" && !isHex(f[2], 64) {
		return "", c, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n < 0 {
		return "", c, false
	}
	c.size = n
	if f[2] != "-" {
		c.sum = f[2]
	}
	return f[0], c, true
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return false
		}
	}
	return true
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
