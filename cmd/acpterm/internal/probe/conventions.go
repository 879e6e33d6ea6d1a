package probe

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/randhex"
)

// The informational cases: what a client does where the specification
// leaves a choice. They report, they do not judge.

func caseShellLine(ctx context.Context, t *tester) verdict {
	req := &acp.CreateTerminalRequest{SessionID: t.sid, Command: "echo a && echo b", Cwd: acp.Ptr(t.cwd)}
	st, out, err := runToEnd(ctx, t, req)
	switch {
	case err != nil:
		return note("not run by a shell: %v", err)
	case lf(out.Output) == "a\nb\n":
		return note("run by a shell: output %q", out.Output)
	}
	return note("not run by a shell: %s, output %q", waitStatus(st), out.Output)
}

func caseSignalNamePOSIX(ctx context.Context, t *tester) verdict {
	st, _, err := selfTerm(ctx, t)
	switch {
	case err != nil:
		return note("%v", err)
	case st.Signal == nil:
		return note("no signal reported (%s)", waitStatus(st))
	case *st.Signal == "SIGTERM":
		return note("POSIX name: %q", *st.Signal)
	}
	return note("not a POSIX name: %q for SIGTERM", *st.Signal)
}

func caseSignalExitCodeNull(ctx context.Context, t *tester) verdict {
	st, _, err := selfTerm(ctx, t)
	switch {
	case err != nil:
		return note("%v", err)
	case st.ExitCode == nil:
		return note("exitCode null: %s", waitStatus(st))
	}
	return note("exitCode %d reported for a signal death: %s", *st.ExitCode, waitStatus(st))
}

func caseWaitCancel(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("sleep 30"))
	if err != nil {
		return note("%v", err)
	}
	t.tap.drainReplies()
	sent := t.tap.onSent(acp.MethodTerminalWaitForExit)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := t.wait(wctx, id)
		done <- err
	}()
	select {
	case <-sent:
	case err := <-done:
		return note("wait_for_exit on `sleep 30` answered before it could be cancelled: %v", err)
	}
	// Cancelling the context makes the SDK send $/cancel_request.
	cancel()
	<-done
	var reply string
	rctx, rcancel := within(ctx, 2*time.Second)
	defer rcancel()
	select {
	case r := <-t.tap.replies:
		switch {
		case r.Result:
			reply = "answered the cancelled wait with a result"
		case r.Code == acp.CodeRequestCancelled:
			reply = "answered the cancelled wait with -32800"
		default:
			reply = fmt.Sprintf("answered the cancelled wait with error %d", r.Code)
		}
	case <-rctx.Done():
		reply = "did not answer the cancelled wait within 2 s"
	}
	out, err := t.output(ctx, id)
	switch {
	case err != nil:
		return note("%s; then %v", reply, err)
	case out.ExitStatus != nil:
		return note("%s, and the command stopped (%s)", reply, exitStatus(out.ExitStatus))
	}
	return note("%s; the command kept running", reply)
}

func caseReleaseResolvesWait(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("sleep 30"))
	if err != nil {
		return note("%v", err)
	}
	sent := t.tap.onSent(acp.MethodTerminalWaitForExit)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		st  *acp.WaitForTerminalExitResponse
		err error
	}
	done := make(chan answer, 1)
	go func() {
		st, err := t.wait(wctx, id)
		done <- answer{st, err}
	}()
	select {
	case <-sent:
	case a := <-done:
		return note("wait_for_exit on `sleep 30` answered before the release: %v", a.err)
	}
	// A client may serve requests concurrently, so the release must not
	// overtake the wait. Nothing shows when a client has taken a request
	// up; a round trip sent after the wait, and a moment, make it all but
	// certain, and an error answer below is reported as possibly that.
	if _, err := t.output(ctx, id); err != nil {
		cancel()
		<-done
		return note("%v", err)
	}
	pause(ctx, 100*time.Millisecond)
	if err := t.release(ctx, id); err != nil {
		cancel()
		<-done
		return note("%v", err)
	}
	tm := time.NewTimer(2 * time.Second)
	defer tm.Stop()
	select {
	case a := <-done:
		if a.err != nil {
			return note("the pending wait was answered with %s (unless the client took the wait up only after the release)", strings.TrimPrefix(a.err.Error(), acp.MethodTerminalWaitForExit+": "))
		}
		return note("the pending wait was answered with %s", waitStatus(a.st))
	case <-tm.C:
		cancel()
		<-done
		return note("the pending wait was still unanswered 2 s after the release")
	case <-ctx.Done():
		cancel()
		<-done
		return note("the pending wait was still unanswered when the case ran out of time")
	}
}

// aliveScript exits 0 once process $1 is gone (a zombie counts as gone:
// some hosts never reap orphans), within about 2 s. If it is still there
// it kills it, provided it still is the probe's `sleep 37`, and exits 1.
const aliveScript = `p=$1
alive() {
  if [ -r /proc/$p/stat ]; then
    s=$(sed 's/^.*) //' /proc/$p/stat 2>/dev/null | cut -c1)
    [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
  else
    kill -0 "$p" 2>/dev/null
  fi
}
i=0
while [ $i -lt 20 ]; do
  alive || { echo gone; exit 0; }
  sleep 0.1 2>/dev/null || sleep 1
  i=$((i+1))
done
if [ -r /proc/$p/cmdline ]; then
  tr '\0' ' ' < /proc/$p/cmdline | grep -q 'sleep 37' && kill -KILL "$p"
else
  ps -o args= -p "$p" 2>/dev/null | grep -q 'sleep 37' && kill -KILL "$p"
fi
echo alive
exit 1`

var childPID = regexp.MustCompile(`child (\d+)`)

func caseKillProcessGroup(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh(`sleep 37 & echo "child $!"; wait`))
	if err != nil {
		return note("%v", err)
	}
	var pid string
	seen, err := poll(ctx, 3*time.Second, 50*time.Millisecond, func() (bool, error) {
		out, err := t.output(ctx, id)
		if err != nil {
			return false, err
		}
		if m := childPID.FindStringSubmatch(out.Output); m != nil {
			pid = m[1]
			return true, nil
		}
		return out.ExitStatus != nil, nil
	})
	switch {
	case err != nil:
		return note("%v", err)
	case !seen || pid == "":
		return note("the command never printed its child's pid")
	}
	if err := t.kill(ctx, id); err != nil {
		return note("%v", err)
	}
	if _, err := t.wait(ctx, id); err != nil {
		return note("after kill, %v", err)
	}
	st, out, err := runToEnd(ctx, t, t.sh(aliveScript, pid))
	switch {
	case err != nil:
		return note("checking on the child: %v", err)
	case hasCode(st.ExitCode, 0):
		return note("the shell's background child (pid %s) died with it", pid)
	case hasCode(st.ExitCode, 1):
		return note("the shell's background child (pid %s) survived terminal/kill (the probe then killed it)", pid)
	}
	return note("could not tell: the check ended with %s, output %q", waitStatus(st), out.Output)
}

func caseEnvDefaults(ctx context.Context, t *tester) verdict {
	_, out, err := runToEnd(ctx, t, t.sh(`printf 'PAGER=%s GIT_PAGER=%s GIT_TERMINAL_PROMPT=%s' "${PAGER-(unset)}" "${GIT_PAGER-(unset)}" "${GIT_TERMINAL_PROMPT-(unset)}"`))
	switch {
	case err != nil:
		return note("%v", err)
	case out.Output == "PAGER=cat GIT_PAGER=cat GIT_TERMINAL_PROMPT=0":
		return note("all set: %s", out.Output)
	}
	return note("%s", out.Output)
}

func caseCwdDefault(ctx context.Context, t *tester) verdict {
	req := t.sh("pwd")
	req.Cwd = nil
	_, out, err := runToEnd(ctx, t, req)
	if err != nil {
		return note("create without cwd: %v", err)
	}
	got := strings.TrimRight(out.Output, "\r\n")
	if path.Clean(got) == path.Clean(t.cwd) {
		return note("ran in the session cwd %q", got)
	}
	return note("ran in %q; the session cwd is %q", got, t.cwd)
}

func caseCwdRelative(ctx context.Context, t *tester) verdict {
	req := t.sh("pwd")
	req.Cwd = acp.Ptr(".")
	_, out, err := runToEnd(ctx, t, req)
	if err != nil {
		return note("cwd \".\": %v", err)
	}
	return note("cwd \".\" accepted: ran in %q", strings.TrimRight(out.Output, "\r\n"))
}

func caseSessionScopedIDs(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("echo scoped"))
	if err != nil {
		return note("%v", err)
	}
	if _, err := t.wait(ctx, id); err != nil {
		return note("%v", err)
	}
	other := acp.SessionID("sess_acpterm_probe_other_" + randhex.String(4))
	ask := func(tid acp.TerminalID) error {
		_, err := t.conn.TerminalOutput(ctx, &acp.TerminalOutputRequest{SessionID: other, TerminalID: tid})
		return err
	}
	err = ask(id)
	if err == nil {
		return note("terminal/output with this session's terminal id under another sessionId answered: ids are not scoped to their session")
	}
	var got *acp.Error
	if !asACPError(err, &got) {
		return note("under another sessionId: %s", describeErr(err, 0))
	}
	fake := acp.TerminalID("term_acpterm_probe_never_issued_" + randhex.String(4))
	var ref *acp.Error
	if !asACPError(ask(fake), &ref) {
		return note("under another sessionId: error %d (an unknown id got no error to compare with)", got.Code)
	}
	same := got.Code == ref.Code && strings.ReplaceAll(got.Message, string(id), "ID") == strings.ReplaceAll(ref.Message, string(fake), "ID")
	if same {
		return note("under another sessionId: error %d, the same as for an unknown id", got.Code)
	}
	return note("under another sessionId: error %d %q, unlike an unknown id's %d %q: the error tells that the terminal exists", got.Code, got.Message, ref.Code, ref.Message)
}
