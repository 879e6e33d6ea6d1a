package sandbox

import (
	"fmt"
	"strings"
)

// Report is what this machine can enforce, for `acpterm sandbox` and logs.
type Report struct {
	OS string
	// LandlockABI is the kernel's Landlock ABI, capped at what this build
	// knows; 0 when Landlock is unavailable.
	LandlockABI int
	// Namespaces: a user namespace with network and mount namespaces can
	// be created and set up (needed for DenyNetwork and a read-only .git).
	Namespaces bool
	// NamespacesErr says why not, when known.
	NamespacesErr string
	// Root: the host runs as root (identity mapping of all ids).
	Root bool
	// Init: the host program called Init.
	Init bool
	// Modes says, per mode and network setting, what Wrap would enforce
	// (with BestEffort) and what it would miss.
	Modes []ModeReport
}

// ModeReport is what Wrap would do with one policy on this machine.
type ModeReport struct {
	Mode    Mode
	Network Network
	Applied *Applied // nil when Err is set
	Err     string
}

// String describes the report in a few lines of text.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "os: %s\n", r.OS)
	if r.OS != "linux" {
		b.WriteString("sandbox: not implemented on this system (planned: Seatbelt via sandbox-exec on macOS, AppContainer and Job objects on Windows); only mode off works\n")
		return b.String()
	}
	if r.LandlockABI == 0 {
		b.WriteString("landlock: not available\n")
	} else {
		fmt.Fprintf(&b, "landlock: ABI %d (filesystem: %s; tcp rules: %s; signal and abstract socket scoping: %s)\n",
			r.LandlockABI, yes(r.LandlockABI >= minFSABI, "partial, truncate(2) unchecked"),
			yes(r.LandlockABI >= 4, "no"), yes(r.LandlockABI >= 6, "no"))
	}
	switch {
	case !r.Init:
		b.WriteString("namespaces: unknown (the host program does not call sandbox.Init)\n")
	case r.Namespaces:
		who := "caller's own ids mapped"
		if r.Root {
			who = "root, all ids mapped"
		}
		fmt.Fprintf(&b, "namespaces: user+network+mount available (%s)\n", who)
	default:
		fmt.Fprintf(&b, "namespaces: not available: %s\n", r.NamespacesErr)
	}
	for _, m := range r.Modes {
		fmt.Fprintf(&b, "%s, network %s: ", m.Mode, m.Network)
		if m.Err != "" {
			b.WriteString(m.Err + "\n")
			continue
		}
		b.WriteString(m.Applied.String() + "\n")
	}
	return b.String()
}

func yes(ok bool, otherwise string) string {
	if ok {
		return "yes"
	}
	return otherwise
}
