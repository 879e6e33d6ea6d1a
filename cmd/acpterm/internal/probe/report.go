package probe

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Result is the verdict of one case.
type Result string

// The four results. Informational cases only ever end in ResultInfo (or
// ResultSkip): they record what the client does where the protocol leaves
// a choice, and a client cannot fail them.
const (
	ResultPass Result = "pass"
	ResultFail Result = "fail"
	ResultInfo Result = "info"
	ResultSkip Result = "skip"
)

// Report is the outcome of one probe run, the document --json writes. Its
// JSON shape is stable: fields may be added, never renamed or removed.
type Report struct {
	// Client is the clientInfo the client sent in initialize; empty
	// strings when it sent none.
	Client ClientInfo `json:"client"`
	// ProtocolVersion is the version the client asked for in initialize.
	ProtocolVersion int          `json:"protocolVersion"`
	Cases           []CaseResult `json:"cases"`
	Summary         Summary      `json:"summary"`
}

// ClientInfo names the probed client.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// CaseResult is one case's outcome.
type CaseResult struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Rule      string `json:"rule"`
	Normative bool   `json:"normative"`
	Result    Result `json:"result"`
	// Observed says what the client did, in one line.
	Observed   string `json:"observed"`
	DurationMs int64  `json:"durationMs"`
}

// Summary counts the cases by result.
type Summary struct {
	Pass int `json:"pass"`
	Fail int `json:"fail"`
	Info int `json:"info"`
	Skip int `json:"skip"`
}

// add counts one result.
func (s *Summary) add(r Result) {
	switch r {
	case ResultPass:
		s.Pass++
	case ResultFail:
		s.Fail++
	case ResultInfo:
		s.Info++
	case ResultSkip:
		s.Skip++
	}
}

// Summarize recomputes Summary from Cases.
func (r *Report) Summarize() {
	r.Summary = Summary{}
	for _, c := range r.Cases {
		r.Summary.add(c.Result)
	}
}

// WriteJSON writes the report, indented, to w.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeFile writes the report to path through a temporary file in the same
// directory, so a reader never sees half a report.
func (r *Report) writeFile(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".acpterm-probe-*.json")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = r.WriteJSON(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteTable writes the results as plain text in aligned columns: result,
// case id, observed. Failures are in capitals so they stand out.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tCASE\tOBSERVED")
	for _, c := range r.Cases {
		res := string(c.Result)
		if c.Result == ResultFail {
			res = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", res, c.ID, oneLine(c.Observed))
	}
	return tw.Flush()
}

// Table is WriteTable into a string.
func (r *Report) Table() string {
	var b strings.Builder
	_ = r.WriteTable(&b)
	return b.String()
}

// Headline is a one-line verdict with the counts.
func (r *Report) Headline() string {
	s := r.Summary
	counts := fmt.Sprintf("%d pass, %d fail, %d info, %d skip", s.Pass, s.Fail, s.Info, s.Skip)
	who := r.Client.Name
	if who == "" {
		who = "the client"
	} else if r.Client.Version != "" {
		who += " " + r.Client.Version
	}
	switch {
	case s.Fail > 0:
		return fmt.Sprintf("acpterm probe: %s fails %d normative case(s): %s.", who, s.Fail, counts)
	case s.Pass == 0:
		return fmt.Sprintf("acpterm probe: nothing was checked on %s: %s.", who, counts)
	case s.Skip > 0:
		return fmt.Sprintf("acpterm probe: %s passes every normative case that ran: %s.", who, counts)
	}
	return fmt.Sprintf("acpterm probe: %s passes every normative case: %s.", who, counts)
}

// message is the closing agent message: the headline, then the table in a
// fence so that clients rendering markdown keep the columns aligned.
func (r *Report) message() string {
	return r.Headline() + "\n\n```text\n" + r.Table() + "```\n"
}

// oneLine keeps a table row on one line whatever an observation holds.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
}
