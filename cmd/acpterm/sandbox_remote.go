package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
)

// remoteSettings are the settings acpterm sandbox --remote asks about, in
// the order the local report lists them.
var remoteSettings = []struct{ mode, network string }{
	{"read-only", "allow"}, {"read-only", "deny"}, {"workspace-write", "allow"}, {"workspace-write", "deny"},
}

// remoteSandbox is acpterm sandbox --remote TARGET: the target's kernel
// and user as its exec server reports them, in the local report's words,
// then one line per setting, from an exec server started with it there
// (the servers are asked at once; each is closed before the report).
func remoteSandbox(ctx context.Context, rc *client.Remote, stdout, stderr io.Writer) int {
	where := rc.Target.String()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "acpterm sandbox: --remote %s: %s\n", textsafe.Line(where), textsafe.Line(err.Error()))
		return client.ExitFailure
	}
	ctx, cancel := context.WithTimeout(ctx, client.DefaultInitTimeout)
	defer cancel()
	in, err := client.InstallRemote(ctx, rc, nil)
	if err != nil {
		return fail(err)
	}
	if in.Copied {
		fmt.Fprintf(stderr, "acpterm: %s\n", textsafe.Line(in.String()))
	}
	hellos := make([]*remote.HelloResponse, len(remoteSettings))
	errs := make([]error, len(remoteSettings))
	var wg sync.WaitGroup
	for i, s := range remoteSettings {
		wg.Go(func() {
			// BestEffort: what the target does without is reported, not
			// refused; a setting it cannot set up at all is.
			p := &sandbox.Policy{BestEffort: true}
			var err error
			if p.Mode, err = parseMode(s.mode); err == nil {
				p.Network, err = parseNetwork(s.network)
			}
			if err != nil {
				errs[i] = err
				return
			}
			cl, err := client.DialRemote(ctx, rc, in, p, nil, nil)
			if se := (*remote.SandboxError)(nil); errors.As(err, &se) {
				h := client.SafeHello(se.Hello)
				hellos[i] = &h
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			h := client.SafeHello(cl.Hello())
			hellos[i] = &h
			_ = cl.Close()
		})
	}
	wg.Wait()
	var h *remote.HelloResponse
	for i := range hellos {
		if hellos[i] != nil {
			h = hellos[i]
			break
		}
	}
	if h == nil {
		return fail(errs[0])
	}
	fmt.Fprint(stdout, remoteReport(where, h, hellos, errs))
	return client.ExitOK
}

// remoteReport writes what the target said: the header lines of
// sandbox.Report.String for its kernel and user, then the settings.
func remoteReport(where string, h *remote.HelloResponse, hellos []*remote.HelloResponse, errs []error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "target: %s (%s/%s, acpterm %s, commands run in %s, isolation %s)\n",
		where, h.OS, h.Arch, h.Version, h.DefaultCwd, h.Isolation)
	sb := h.Sandbox
	rep := sandbox.Report{OS: h.OS, LandlockABI: sb.LandlockABI, Namespaces: sb.Namespaces,
		NamespacesErr: sb.NamespacesErr, Root: sb.Root, Init: true}
	b.WriteString(rep.String())
	if h.OS != "linux" {
		return safeLines(b.String())
	}
	for i, s := range remoteSettings {
		fmt.Fprintf(&b, "%s, network %s: ", s.mode, s.network)
		switch x := hellos[i]; {
		case x == nil:
			fmt.Fprintf(&b, "the exec server did not start: %v\n", errs[i])
		case x.Sandbox.Error != "":
			b.WriteString("refused there: " + x.Sandbox.Error + "\n")
		case len(x.Sandbox.Missing) > 0:
			fmt.Fprintf(&b, "enforced there, landlock abi %d, missing: %s\n", x.Sandbox.LandlockABI, strings.Join(x.Sandbox.Missing, "; "))
		default:
			fmt.Fprintf(&b, "enforced there, landlock abi %d\n", x.Sandbox.LandlockABI)
		}
	}
	// The secrets a run's sandbox hides there, as the local report says
	// here (read-only, the network allowed).
	if x := hellos[0]; x != nil && x.Sandbox.Error == "" {
		b.WriteString(hiddenReport(x.Sandbox.Hidden, x.Sandbox.Shown, x.Sandbox.Redacted) + byLandlock(x.Sandbox.HiddenByLandlock))
	}
	return safeLines(b.String())
}

// safeLines makes each line safe to print: the target's words (its
// errors, its directory) are not acpterm's.
func safeLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = textsafe.Line(l)
	}
	return strings.Join(lines, "\n") + "\n"
}
