package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestFlagUserErrors: a flag value that cannot work, or flags that
// contradict each other, are refused at once with a usage error (exit 2)
// naming the flag, rather than replaced by a default, ignored, or failing
// later.
func TestFlagUserErrors(t *testing.T) {
	t.Parallel()
	run := func(flags ...string) []string {
		return append(append([]string{"run"}, flags...), "-p", "x", "--", "true")
	}
	tests := []struct {
		args []string
		want string
	}{
		{run("--max-terminals", "0"), "--max-terminals must be at least 1"},
		{run("--max-terminals", "-1"), "--max-terminals must be at least 1"},
		{run("--kill-grace", "-1s"), "--kill-grace must be positive"},
		{run("--kill-grace", "0s"), "--kill-grace must be positive"},
		{run("--timeout", "-1s"), "--timeout must not be negative"},
		{run("--init-timeout", "0s"), "--init-timeout must be positive"},
		{run("--init-timeout", "-5s"), "--init-timeout must be positive"},
		{run("--output-limit", "0"), "--output-limit must be positive"},
		{run("--output-limit", "1.5"), "not a whole number of bytes"},
		{run("--output-limit", "0.1K"), "not a whole number of bytes"},
		{run("--sandbox", "read-only", "--writable", "."), "--writable needs --sandbox workspace-write"},
		{run("--sandbox", "off", "--writable-git"), "--writable-git needs --sandbox workspace-write"},
		{run("--sandbox", "off", "--sandbox-agent"), "--sandbox-agent with --sandbox off and --network allow"},
		{[]string{"demo", "--sandbox", "read-only", "--writable", "."}, "--writable needs --sandbox workspace-write"},
		{[]string{"agent", "--timeout", "-1s"}, "--timeout must not be negative"},
		{[]string{"agent", "--exec", "local", "--sandbox", "off", "--writable", "."}, "--writable needs --sandbox workspace-write"},
		{[]string{"sessions", "--timeout", "0s", "--", "true"}, "--timeout must be positive"},
		{[]string{"sessions", "--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{"probe", "--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{"probe", "--case", "nope"}, "unknown case"},
		{[]string{"login", "--init-timeout", "-1s", "--", "true"}, "--init-timeout must be positive"},
		{[]string{"exec-server", "--agent", "--sandbox", "read-only", "--", "true"}, "--agent takes no other flag than --sandbox-agent (--sandbox)"},
		{[]string{"exec-server", "--sandbox-agent"}, "--sandbox-agent needs --agent"},
		{[]string{"exec-server", "--agent"}, "--agent needs the agent's command line"},
		{[]string{"version", "extra"}, "unexpected arguments"},
		{[]string{"help", "run", "extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := acpterm(t, opts{plain: true}, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("acpterm %q: exit %d (want 2), stderr lacks %q:\n%s", tt.args, r.code, tt.want, r.stderr)
			}
		})
	}
}

// TestParseSizeWhole: a size that is not a whole number of bytes is
// refused rather than rounded down; fractions of a unit that are whole
// bytes are fine.
func TestParseSizeWhole(t *testing.T) {
	for in, want := range map[string]uint64{"1.5MiB": 3 << 19, "0.5K": 512, "1.1MB": 1100000, "2.25KiB": 2304, "3.0": 3} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"1.5", "0.1K", "1.0000001KiB", "1.5B", "1/2", "1..5K", "1.5.5K"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestFlagErrorsBeforeStdin: every flag is checked before the prompt is
// read from stdin, which may be a pipe nobody writes to yet.
func TestFlagErrorsBeforeStdin(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--sandbox", "bogus", "--", "true"},
		{"run", "--network", "bogus", "--", "true"},
		{"run", "--max-terminals", "0", "--", "true"},
	} {
		pr, pw := io.Pipe() // never written: a read would wait for ever
		var stderr strings.Builder
		code := run(context.Background(), args, pr, io.Discard, &stderr)
		pw.Close()
		if code != 2 {
			t.Errorf("acpterm %q: exit %d, want 2; stderr:\n%s", args, code, stderr.String())
		}
	}
}
