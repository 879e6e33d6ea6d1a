package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// withoutMounts drops what needs a mount namespace, which cannot be had
// (nsErr), and says what is lost: as degraded with
// WithoutMountNamespace, except for the hidden paths, which Landlock
// hides instead where it can (hideByLandlock) and are missing otherwise
// (a secret left readable fails Wrap unless BestEffort).
func (pr *prepared) withoutMounts(p *Policy, nsErr error) {
	what := []string{}
	if len(pr.pl.ReadOnly) > 0 {
		what = append(what, "keep "+strings.Join(pr.pl.ReadOnly, ", ")+" read-only")
	}
	if pr.pl.ReadOnlyAll {
		what = append(what, "stop chmod, chown and utimes outside the writable paths")
	}
	if n := len(pr.protected); n > 0 {
		what = append(what, "protect the files editors and agents run things from ("+someOf(pr.protected)+")")
	}
	if len(what) > 0 {
		msg := fmt.Sprintf("no mount namespace (%v): cannot %s", nsErr, strings.Join(what, ", nor "))
		if p.WithoutMountNamespace {
			pr.degraded = append(pr.degraded, msg)
		} else {
			pr.missing = append(pr.missing, msg)
		}
	}
	if pr.hideByLandlock(nsErr) {
		pr.pl.Hide = nil
	}
	if len(pr.pl.Hide) > 0 {
		paths := append(slices.Clone(pr.applied.Hidden), pr.applied.Redacted...)
		pr.missing = append(pr.missing, fmt.Sprintf("no mount namespace (%v): cannot hide %s (--readable PATH, Policy.Readable, lets a path through)", nsErr, someOf(paths)))
		pr.applied.Hidden, pr.applied.Shown, pr.applied.Redacted = nil, nil, nil
	}
	pr.pl.ReadOnly, pr.pl.ReadOnlyAll, pr.pl.Hide = nil, false, nil
	pr.protected, pr.protect, pr.reserve = nil, nil, nil
}

// someOf names the first three of paths and how many more there are.
func someOf(paths []string) string {
	n := len(paths)
	names := strings.Join(paths[:min(n, 3)], ", ")
	if n > 3 {
		names += fmt.Sprintf(" and %d more", n-3)
	}
	return names
}
