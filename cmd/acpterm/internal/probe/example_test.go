package probe_test

import (
	"fmt"
	"os"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/probe"
)

func ExampleReport_WriteTable() {
	rep := &probe.Report{
		Client: probe.ClientInfo{Name: "some-editor", Version: "1.0"},
		Cases: []probe.CaseResult{
			{ID: "exit-code-nonzero", Normative: true, Result: probe.ResultPass, Observed: "`exit 3`: exitCode 3 from wait_for_exit and output"},
			{ID: "truncation-keeps-end", Normative: true, Result: probe.ResultFail, Observed: `limit 64 of 18893 bytes: kept the beginning "line 1\nline 2\n…"`},
			{ID: "signal-name-posix", Result: probe.ResultInfo, Observed: `not a POSIX name: "Terminated" for SIGTERM`},
		},
	}
	rep.Summarize()
	fmt.Println(rep.Headline())
	rep.WriteTable(os.Stdout)
	// Output:
	// acpterm probe: some-editor 1.0 fails 1 normative case(s): 1 pass, 1 fail, 1 info, 0 skip.
	// RESULT  CASE                  OBSERVED
	// pass    exit-code-nonzero     `exit 3`: exitCode 3 from wait_for_exit and output
	// FAIL    truncation-keeps-end  limit 64 of 18893 bytes: kept the beginning "line 1\nline 2\n…"
	// info    signal-name-posix     not a POSIX name: "Terminated" for SIGTERM
}
