package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/sessionstore"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/remote"
)

type sessionsFlags struct {
	fs      *flag.FlagSet
	cwd     string
	timeout time.Duration
	noAgent bool
	confine autoBool
}

func newSessionsFlags(out io.Writer) *sessionsFlags {
	f := &sessionsFlags{fs: flag.NewFlagSet("acpterm sessions", flag.ContinueOnError), timeout: client.DefaultListTimeout}
	fs := f.fs
	fs.SetOutput(out)
	fs.StringVar(&f.cwd, "cwd", "", "only the sessions of `DIR` (default: every directory)")
	fs.DurationVar(&f.timeout, "timeout", f.timeout, "give the agent `DURATION` to start and list its sessions")
	fs.BoolVar(&f.noAgent, "no-agent", false, "do not start the agent to ask for its own list")
	fs.Var(&f.confine, "sandbox-agent", sandboxAgentUsage)
	fs.Usage = usageText(fs, `usage: acpterm sessions [flags] [NAME | -- AGENT [ARGS...]]

Lists the sessions acpterm remembers, the most recently used first: acpterm
run records each session it sends a prompt in, per agent and directory,
with the first line of its first prompt as its title. "acpterm run --resume"
continues the last one of an agent in a directory, "--session ID" any one.

With an agent (a name from acpterm agents, or a command after "--"), only
its sessions are listed, merged with the ones the agent lists itself
(session/list) when it offers that: acpterm then starts the agent in the
current directory, for at most --timeout, as acpterm run starts it: an
agent with a profile confined to its own state (--sandbox-agent=false
leaves it unconfined), npx outside the workspace with an npm cache of
acpterm's own. The FROM column says where each session was found:
acpterm, agent, or both.

The sessions are kept in $XDG_STATE_HOME/acpterm/sessions.json (else
~/.local/state/acpterm/sessions.json; %AppData%\acpterm on Windows), at
most 200 of them.
`)
	return f
}

// sessionRow is one line of the listing.
type sessionRow struct {
	updated time.Time
	when    string // updated, as the agent wrote it when it did not parse
	id      string
	agent   string
	cwd     string
	title   string
	from    string
}

// sessionsCmd is acpterm sessions: the sessions the store remembers,
// merged with the agent's own list when an agent is given.
func sessionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newSessionsFlags(stderr)
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "acpterm sessions: "+format+"\n(see acpterm help sessions)\n", a...)
		return client.ExitUsage
	}
	if err := f.check(); err != nil {
		return usage("%v", err)
	}
	agent, name := f.fs.Args(), ""
	if len(agent) > 0 {
		var err error
		if agent, name, err = agentArgs(args, agent); err != nil {
			return usage("%v", err)
		}
	}
	rows, err := storedSessions(f.cwd, name, agent, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "acpterm sessions: %v\n", err)
		return client.ExitFailure
	}
	code := client.ExitOK
	if len(agent) > 0 && !f.noAgent {
		prof, confine, err := agentConfinement(name, agent, f.confine)
		if err != nil {
			return usage("%v", err)
		}
		listed, err := client.ListAgentSessions(ctx, &client.ListConfig{Agent: agent, Cwd: f.cwd, Timeout: f.timeout, Stderr: stderr,
			Profile: prof, Confine: confine})
		switch {
		case errors.Is(err, client.ErrNoSessionList):
			// The stored sessions are all there is.
		case err != nil:
			fmt.Fprintf(stderr, "acpterm sessions: asking the agent: %s\n", textsafe.Line(err.Error()))
			code = client.ExitAgent
		}
		rows = mergeListed(rows, listed, agentLabel(name, agent))
	}
	slices.SortStableFunc(rows, func(a, b sessionRow) int { return b.updated.Compare(a.updated) })
	writeSessions(stdout, rows)
	return code
}

// check refuses a timeout that is not positive and makes --cwd absolute.
func (f *sessionsFlags) check() error {
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, not %v", f.timeout)
	}
	if f.cwd != "" {
		abs, err := filepath.Abs(f.cwd)
		if err != nil {
			return fmt.Errorf("--cwd: %v", err)
		}
		f.cwd = abs
	}
	return nil
}

// storedSessions are the rows of the sessions the store remembers in cwd
// ("" for every directory) of the agent started by name or as command
// (any agent when command is empty). The store's warnings go to stderr.
func storedSessions(cwd, name string, command []string, stderr io.Writer) ([]sessionRow, error) {
	store, err := sessionstore.Open()
	if err != nil {
		return nil, fmt.Errorf("no state directory: %v", err)
	}
	store.Warn = func(msg string) { fmt.Fprintln(stderr, "acpterm sessions: "+msg) }
	stored, err := store.List()
	if err != nil {
		return nil, err
	}
	var rows []sessionRow
	for _, e := range stored {
		// --cwd names a directory here: a target's same path is another.
		if (cwd != "" && (e.Cwd != cwd || e.Target != "")) || (len(command) > 0 && !sameAgent(&e, name, command)) {
			continue
		}
		rows = append(rows, sessionRow{updated: e.Updated, id: e.SessionID, agent: agentLabel(e.Agent, e.Command), cwd: storedWhere(&e), title: e.Title, from: "acpterm"})
	}
	return rows, nil
}

// agentLabel is how the AGENT column names an agent: by its name, else
// by its command line.
func agentLabel(name string, command []string) string {
	if name != "" {
		return name
	}
	return textsafe.QuoteArgs(command)
}

// mergeListed adds the sessions the agent listed (who names it) to rows:
// a session already stored is marked as found in both, and gets the
// agent's title when it has none of its own.
func mergeListed(rows []sessionRow, listed []acp.SessionInfo, who string) []sessionRow {
	for _, s := range listed {
		i := slices.IndexFunc(rows, func(r sessionRow) bool { return r.id == string(s.SessionID) })
		if i < 0 {
			rows = append(rows, listedRow(&s, who))
			continue
		}
		rows[i].from = "both"
		if rows[i].title == "" && s.Title != nil {
			rows[i].title = *s.Title
		}
	}
	return rows
}

// listedRow is the row of a session only the agent listed. Its time is
// kept as the agent wrote it when it is not RFC 3339.
func listedRow(s *acp.SessionInfo, who string) sessionRow {
	r := sessionRow{id: string(s.SessionID), agent: who, cwd: s.Cwd, from: "agent"}
	if s.Title != nil {
		r.title = *s.Title
	}
	if s.UpdatedAt != nil {
		if t, err := time.Parse(time.RFC3339, *s.UpdatedAt); err == nil {
			r.updated = t
		} else {
			r.when = *s.UpdatedAt
		}
	}
	return r
}

// sameAgent reports whether a stored session is of the agent asked for:
// by name when it was given by one, else by command line.
func sameAgent(e *sessionstore.Entry, name string, command []string) bool {
	if name != "" {
		return e.Agent == name
	}
	return e.Agent == "" && slices.Equal(e.Command, command)
}

// writeSessions prints the table. Everything in it may come from an agent
// (its session IDs, titles, directories): textsafe.Line, clipped.
func writeSessions(w io.Writer, rows []sessionRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no sessions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UPDATED\tSESSION\tAGENT\tDIR\tFROM\tTITLE")
	for _, r := range rows {
		when := r.when
		if !r.updated.IsZero() {
			when = r.updated.Local().Format("2006-01-02 15:04")
		}
		if when == "" {
			when = "-"
		}
		cell := func(s string, n int) string {
			s = textsafe.Line(s)
			s = strings.ReplaceAll(s, "\t", " ")
			if len([]rune(s)) > n {
				s = string([]rune(s)[:n-1]) + "…"
			}
			if s == "" {
				return "-"
			}
			return s
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(when, 25), cell(r.id, 60), cell(r.agent, 40), cell(r.cwd, 60), r.from, cell(r.title, 80))
	}
	_ = tw.Flush()
}

// storedWhere is a stored session's directory as a person reads it: a
// path here, or the --remote target with its directory.
func storedWhere(e *sessionstore.Entry) string {
	if e.Target == "" {
		return e.Cwd
	}
	t, err := remote.ParseTarget(e.Target)
	if err != nil || t.Dir != "" {
		return e.Target + " " + e.Cwd
	}
	t.Dir = e.Cwd
	return t.String()
}
