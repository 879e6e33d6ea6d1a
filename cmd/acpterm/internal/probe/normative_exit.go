package probe

import (
	"context"
	"strings"
	"time"
)

func caseWaitIgnoresGrandchild(ctx context.Context, t *tester) verdict {
	id, err := t.create(ctx, t.sh("sleep 30 & echo started"))
	if err != nil {
		return fail("%v", err)
	}
	wctx, cancel := within(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	st, err := t.wait(wctx, id)
	took := time.Since(start)
	if expired(ctx, wctx) {
		return fail("wait_for_exit still pending 3 s after `sh` exited: it waits for the background `sleep 30` that holds the output pipe")
	}
	if err != nil {
		return fail("%v", err)
	}
	if !hasCode(st.ExitCode, 0) {
		return fail("wait_for_exit gave %s, want exitCode 0", waitStatus(st))
	}
	out, err := t.output(ctx, id)
	if err != nil {
		return fail("%v", err)
	}
	if !strings.Contains(out.Output, "started") {
		return fail("wait_for_exit answered in %v but output %q lacks \"started\"", dur(took), out.Output)
	}
	return pass("wait_for_exit answered in %v with exitCode 0 while a background `sleep 30` held the pipe", dur(took))
}

func caseSignalReported(ctx context.Context, t *tester) verdict {
	st, out, err := selfTerm(ctx, t)
	switch {
	case err != nil:
		return fail("%v", err)
	case st.Signal == nil:
		return fail("`kill -TERM $$`: wait_for_exit gave %s, no signal", waitStatus(st))
	case out.ExitStatus == nil || out.ExitStatus.Signal == nil:
		return fail("`kill -TERM $$`: wait_for_exit gave %s but output has %s", waitStatus(st), exitStatus(out.ExitStatus))
	case st.ExitCode != nil:
		return pass("`kill -TERM $$`: %s (an exitCode alongside the signal is tolerated)", waitStatus(st))
	}
	return pass("`kill -TERM $$`: %s", waitStatus(st))
}
