package probe

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/randhex"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// The normative cases: what the ACP v1 specification asks of a client.

func caseCreateReturnsImmediately(ctx context.Context, t *tester) verdict {
	start := time.Now()
	id, err := t.create(ctx, t.sh("sleep 5"))
	took := time.Since(start)
	if err != nil {
		return fail("%v", err)
	}
	if id == "" {
		return fail("terminal/create answered with an empty terminalId after %v", dur(took))
	}
	out, err := t.output(ctx, id)
	if err != nil {
		return fail("created in %v, then %v", dur(took), err)
	}
	if out.ExitStatus != nil {
		return fail("create took %v and `sleep 5` had already finished (%s): create waited for the command", dur(took), exitStatus(out.ExitStatus))
	}
	if took >= 4*time.Second {
		return fail("create took %v for a command that runs 5 s", dur(took))
	}
	return pass("create answered in %v; output then had no exitStatus while `sleep 5` ran", dur(took))
}

func caseOutputWhileRunning(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("echo ready; sleep 5"))
	if err != nil {
		return fail("%v", err)
	}
	start := time.Now()
	var last *acp.TerminalOutputResponse
	seen, err := poll(ctx, 3*time.Second, 50*time.Millisecond, func() (bool, error) {
		out, err := t.output(ctx, id)
		if err != nil {
			return false, err
		}
		last = out
		return out.ExitStatus != nil || strings.Contains(out.Output, "ready"), nil
	})
	switch {
	case err != nil:
		return fail("%v", err)
	case !seen:
		return fail("output still %q 3 s after the command printed \"ready\"", last.Output)
	case last.ExitStatus != nil:
		return fail("%s while `sleep 5` should still run (output %q)", exitStatus(last.ExitStatus), last.Output)
	}
	return pass("output showed %q within %v, with no exitStatus", last.Output, dur(time.Since(start)))
}

func caseExitStatusZero(ctx context.Context, t *tester) verdict {
	const want = "hello from the acpterm probe\n"
	st, out, err := runToEnd(ctx, t, t.sh(`printf 'hello from the acpterm probe\n'`))
	switch {
	case err != nil:
		return fail("%v", err)
	case !hasCode(st.ExitCode, 0) || st.Signal != nil:
		return fail("wait_for_exit gave %s, want exitCode 0", waitStatus(st))
	case out.ExitStatus == nil:
		return fail("after exit, output has no exitStatus (output %q)", out.Output)
	case !hasCode(out.ExitStatus.ExitCode, 0) || out.ExitStatus.Signal != nil:
		return fail("output has %s, want exitCode 0", exitStatus(out.ExitStatus))
	case lf(out.Output) != want:
		return fail("output %q, want %q", out.Output, want)
	case out.Truncated:
		return fail("output %q is marked truncated without a limit", out.Output)
	}
	return pass("exitCode 0 from wait_for_exit and output; output %q, not truncated", out.Output)
}

func caseExitCodeNonzero(ctx context.Context, t *tester) verdict {
	st, out, err := runToEnd(ctx, t, t.sh("exit 3"))
	switch {
	case err != nil:
		return fail("%v", err)
	case !hasCode(st.ExitCode, 3):
		return fail("`exit 3`: wait_for_exit gave %s", waitStatus(st))
	case out.ExitStatus == nil || !hasCode(out.ExitStatus.ExitCode, 3):
		return fail("`exit 3`: wait_for_exit gave exitCode 3 but output has %s", exitStatus(out.ExitStatus))
	}
	return pass("`exit 3`: exitCode 3 from wait_for_exit and output")
}

func caseStdoutAndStderr(ctx context.Context, t *tester) verdict {
	_, out, err := runToEnd(ctx, t, t.sh("echo to-stdout; echo to-stderr >&2"))
	if err != nil {
		return fail("%v", err)
	}
	o, e := strings.Contains(out.Output, "to-stdout"), strings.Contains(out.Output, "to-stderr")
	switch {
	case !o && !e:
		return fail("output %q has neither stream", out.Output)
	case !e:
		return fail("output %q lacks what went to stderr", out.Output)
	case !o:
		return fail("output %q lacks what went to stdout", out.Output)
	}
	return pass("both streams in the output %q", out.Output)
}

func caseArgsVerbatim(ctx context.Context, t *tester) verdict {
	args := []string{"two words", "$HOME", "it's", "*", "semi;colon", ""}
	want := ""
	for _, a := range args {
		want += "[" + a + "]"
	}
	_, out, err := runToEnd(ctx, t, t.sh(`for a in "$@"; do printf '[%s]' "$a"; done`, args...))
	if err != nil {
		return fail("%v", err)
	}
	if out.Output != want {
		return fail("the command received %q, want %q", out.Output, want)
	}
	return pass("the command received %q", out.Output)
}

func caseEnvVar(ctx context.Context, t *tester) verdict {
	const name, value = "ACPTERM_PROBE_VAR", "probe value ✓ $HOME 'q'"
	req := t.sh(`printf '%s' "$ACPTERM_PROBE_VAR"`)
	req.Env = []acp.EnvVariable{{Name: name, Value: value}}
	_, out, err := runToEnd(ctx, t, req)
	if err != nil {
		return fail("%v", err)
	}
	if out.Output != value {
		return fail("%s is %q in the command, want %q", name, out.Output, value)
	}
	return pass("%s=%q reached the command", name, out.Output)
}

func caseCwdAbsolute(ctx context.Context, t *tester) verdict {
	// A directory other than the session's, so that ignoring the request
	// shows. It is made inside the session's cwd, since clients may confine
	// cwds to the workspace; paths are compared as pwd -P prints them.
	_, made, err := runToEnd(ctx, t, t.sh(`d=$(mktemp -d "$PWD/.acpterm-probe.XXXXXX") && cd "$d" && pwd -P`))
	if err != nil {
		return fail("making a directory in the session cwd: %v", err)
	}
	dir := strings.TrimRight(made.Output, "\r\n")
	if made.ExitStatus == nil || made.ExitStatus.ExitCode == nil || *made.ExitStatus.ExitCode != 0 || !path.IsAbs(dir) {
		return fail("could not make a directory in the session cwd %q: output %q", t.cwd, made.Output)
	}
	// The directory goes even after a cancel or when the case's time is
	// up, but bounded like removeFIFOs: a client that stopped answering
	// must not hold the run here.
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_, _, _ = runToEnd(cctx, t, t.sh(`rmdir "$1"`, dir))
	}()
	req := t.sh("pwd -P")
	req.Cwd = acp.Ptr(dir)
	_, out, err := runToEnd(ctx, t, req)
	if err != nil {
		return fail("%v", err)
	}
	got := strings.TrimRight(out.Output, "\r\n")
	if got != dir {
		return fail("cwd %q: pwd printed %q", dir, got)
	}
	return pass("cwd %q: pwd printed %q", dir, got)
}

// utf8Text is the output of the UTF-8 truncation case: characters of one to
// four bytes, numbered lines so that no stretch repeats (a kept head could
// otherwise pass for a suffix).
func utf8Text() string {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "%02d aé€𝄞 ✓\n", i)
	}
	return b.String()
}

// utf8Limit picks a limit whose cut falls inside a character of full, so
// that a byte-exact cut would leave invalid UTF-8.
func utf8Limit(full string) int {
	for n := 100; n < len(full); n++ {
		if len(utf8cut.Tail(full, n)) < n {
			return n
		}
	}
	return 100
}

func caseTailTruncationUTF8(ctx context.Context, t *tester) verdict {
	full := utf8Text()
	limit := utf8Limit(full)
	req := t.sh(`printf '%s' "$1"`, full)
	req.OutputByteLimit = acp.Ptr(uint64(limit))
	_, out, err := runToEnd(ctx, t, req)
	if err != nil {
		return fail("%v", err)
	}
	got := out.Output
	switch {
	case len(got) > limit:
		return fail("limit %d: kept %d bytes", limit, len(got))
	case !utf8.ValidString(got):
		return fail("limit %d: kept %d bytes that are not valid UTF-8: %q", limit, len(got), got)
	case !strings.HasSuffix(full, lf(got)):
		return fail("limit %d: kept %d bytes that are not the end of the output: %q…", limit, len(got), utf8cut.Head(got, 40))
	case len(got) < limit-(utf8.UTFMax-1):
		return fail("limit %d: kept only %d bytes; a cut to a character start drops at most 3", limit, len(got))
	case !out.Truncated:
		return fail("limit %d of %d bytes: kept %d bytes but truncated is false", limit, len(full), len(got))
	}
	return pass("limit %d of %d bytes: kept the last %d bytes, valid UTF-8, truncated true", limit, len(full), len(got))
}

func caseTruncationKeepsEnd(ctx context.Context, t *tester) verdict {
	const lines, limit = 2000, 64
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	full := b.String()
	req := t.sh(`i=1; while [ $i -le 2000 ]; do echo "line $i"; i=$((i+1)); done`)
	req.OutputByteLimit = acp.Ptr(uint64(limit))
	_, out, err := runToEnd(ctx, t, req)
	if err != nil {
		return fail("%v", err)
	}
	got := out.Output
	switch {
	case strings.HasPrefix(lf(got), "line 1\n"):
		return fail("limit %d of %d bytes: kept the beginning %q…", limit, len(full), utf8cut.Head(got, 30))
	case len(got) > limit:
		return fail("limit %d of %d bytes: kept %d bytes", limit, len(full), len(got))
	case !strings.HasSuffix(full, lf(got)) || !strings.HasSuffix(lf(got), "line 2000\n"):
		return fail("limit %d of %d bytes: kept %q, which is not the end of the output", limit, len(full), utf8cut.Head(got, 80))
	case !out.Truncated:
		return fail("limit %d of %d bytes: truncated is false", limit, len(full))
	}
	return pass("limit %d of %d bytes: kept the last %d bytes, ending %q", limit, len(full), len(got), "line 2000\n")
}

func caseOutputLimitZero(ctx context.Context, t *tester) verdict {
	req := t.sh("echo some output")
	req.OutputByteLimit = acp.Ptr(uint64(0))
	_, out, err := runToEnd(ctx, t, req)
	switch {
	case err != nil:
		return fail("%v", err)
	case out.Output != "":
		return fail("limit 0: output %q", out.Output)
	case !out.Truncated:
		return fail("limit 0: output empty but truncated is false although output was dropped")
	}
	return pass("limit 0: output empty, truncated true")
}

func caseKillKeepsTerminal(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("echo before-kill; sleep 30"))
	if err != nil {
		return fail("%v", err)
	}
	if err := t.kill(ctx, id); err != nil {
		return fail("%v", err)
	}
	st, err := t.wait(ctx, id)
	if err != nil {
		return fail("after kill, %v", err)
	}
	out, err := t.output(ctx, id)
	switch {
	case err != nil:
		return fail("after kill, %v", err)
	case out.ExitStatus == nil:
		return fail("after kill and wait_for_exit (%s), output has no exitStatus", waitStatus(st))
	case st.Signal == nil && (st.ExitCode == nil || *st.ExitCode == 0):
		return fail("after kill, wait_for_exit gave %s: neither a signal nor a non-zero exit code", waitStatus(st))
	}
	return pass("after kill: wait_for_exit gave %s; output answered with %s", waitStatus(st), exitStatus(out.ExitStatus))
}

func caseWaitAfterExit(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("exit 5"))
	if err != nil {
		return fail("%v", err)
	}
	first, err := t.wait(ctx, id)
	if err != nil {
		return fail("%v", err)
	}
	if !hasCode(first.ExitCode, 5) {
		return fail("`exit 5`: wait_for_exit gave %s", waitStatus(first))
	}
	var slowest time.Duration
	for i := 2; i <= 3; i++ {
		wctx, cancel := within(ctx, 2*time.Second)
		start := time.Now()
		again, err := t.wait(wctx, id)
		took := time.Since(start)
		cancel()
		switch {
		case err != nil:
			return fail("wait_for_exit #%d after exit: %v", i, err)
		case !sameStatus(first.ExitCode, first.Signal, again.ExitCode, again.Signal):
			return fail("wait_for_exit #1 gave %s, #%d gave %s", waitStatus(first), i, waitStatus(again))
		}
		slowest = max(slowest, took)
	}
	return pass("three waits gave %s; the repeats answered within %v", waitStatus(first), dur(slowest))
}

func caseReleaseInvalidatesID(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("echo done"))
	if err != nil {
		return fail("%v", err)
	}
	if _, err := t.wait(ctx, id); err != nil {
		return fail("%v", err)
	}
	if err := t.release(ctx, id); err != nil {
		return fail("%v", err)
	}
	return expectRefused(ctx, t, id, false, "after release")
}

// expectRefused calls output, wait_for_exit, kill (and release, if asked)
// on id and checks that each answers with an error.
func expectRefused(ctx context.Context, t *tester, id acp.TerminalID, withRelease bool, what string) verdict {
	type call struct {
		name string
		do   func(context.Context) error
	}
	calls := []call{
		{"output", func(ctx context.Context) error { _, err := t.output(ctx, id); return err }},
		{"wait_for_exit", func(ctx context.Context) error { _, err := t.wait(ctx, id); return err }},
		{"kill", func(ctx context.Context) error { return t.kill(ctx, id) }},
	}
	if withRelease {
		// Not t.release: the id is not one of the case's terminals.
		calls = append(calls, call{"release", func(ctx context.Context) error {
			start := time.Now()
			_, err := t.conn.ReleaseTerminal(ctx, &acp.ReleaseTerminalRequest{SessionID: t.sid, TerminalID: id})
			return t.callErr(acp.MethodTerminalRelease, err, start)
		}})
	}
	var accounts []string
	allOK := true
	for _, c := range calls {
		// A wait on a terminal that is gone should be refused at once,
		// not left pending.
		cctx, cancel := within(ctx, 3*time.Second)
		ok, account := refused(c.do(cctx))
		cancel()
		allOK = allOK && ok
		accounts = append(accounts, c.name+" → "+account)
	}
	if !allOK {
		return fail("%s: %s", what, strings.Join(accounts, ", "))
	}
	return pass("%s: %s", what, strings.Join(accounts, ", "))
}

func caseUnknownTerminalID(ctx context.Context, t *tester) verdict {
	id := acp.TerminalID("term_acpterm_probe_never_issued_" + randhex.String(4))
	return expectRefused(ctx, t, id, true, "made-up id")
}

func caseStdinNoHang(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("cat; read x; echo stdin-closed"))
	if err != nil {
		return fail("%v", err)
	}
	wctx, cancel := within(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	st, err := t.wait(wctx, id)
	if expired(ctx, wctx) {
		return fail("`cat; read x` still waiting for input after 5 s")
	}
	if err != nil {
		return fail("%v", err)
	}
	out, err := t.output(ctx, id)
	if err != nil {
		return fail("%v", err)
	}
	if !strings.Contains(out.Output, "stdin-closed") {
		return fail("ended with %s but output %q lacks \"stdin-closed\"", waitStatus(st), out.Output)
	}
	return pass("`cat; read x` ended in %v with %s", dur(time.Since(start)), waitStatus(st))
}
