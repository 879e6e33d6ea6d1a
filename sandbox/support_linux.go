package sandbox

import (
	"os"
	"runtime"
)

// Support probes this machine: the Landlock ABI, whether namespaces can be
// had (which starts the helper once, so it needs Init), and what each
// policy would enforce with BestEffort. For WorkspaceWrite it takes the
// current directory as the workspace.
func Support() Report {
	r := Report{OS: runtime.GOOS, LandlockABI: kernelABI(), Root: os.Geteuid() == 0, Init: initCalled.Load()}
	if r.Init {
		if err := probeNamespaces(); err != nil {
			r.NamespacesErr = err.Error()
		} else {
			r.Namespaces = true
		}
	}
	wd, _ := os.Getwd()
	for _, m := range []Mode{ReadOnly, WorkspaceWrite} {
		for _, n := range []Network{AllowNetwork, DenyNetwork} {
			p := &Policy{Mode: m, Network: n, BestEffort: true, Writable: []string{wd}}
			pr, err := p.prepare()
			if err != nil {
				r.Modes = append(r.Modes, ModeReport{Mode: m, Network: n, Err: err.Error()})
				continue
			}
			a := pr.applied
			r.Modes = append(r.Modes, ModeReport{Mode: m, Network: n, Applied: &a})
		}
	}
	return r
}
