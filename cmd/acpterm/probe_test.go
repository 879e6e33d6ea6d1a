package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/probe"
)

// The probe, run under acpterm's own client, must find every normative
// case passing: the conformance bar CI holds acpterm to.
func TestProbeAgainstRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the whole probe through the binary")
	}
	t.Parallel()
	report := filepath.Join(t.TempDir(), "probe.json")
	r := acpterm(t, opts{plain: true}, "run", "--approve-all", "-p", "go", "--", plainAcpterm(t), "probe", "--json", report)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "passes every normative case")
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep probe.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != len(probe.Cases()) {
		t.Errorf("report has %d cases, the suite %d", len(rep.Cases), len(probe.Cases()))
	}
	for _, c := range rep.Cases {
		if c.Normative && c.Result != probe.ResultPass {
			t.Errorf("normative case %s: %s: %s", c.ID, c.Result, c.Observed)
		}
		if !c.Normative && c.Result != probe.ResultInfo {
			t.Errorf("informational case %s: %s: %s", c.ID, c.Result, c.Observed)
		}
	}
	if rep.Summary.Fail != 0 || rep.Summary.Skip != 0 {
		t.Errorf("summary %+v", rep.Summary)
	}
}
