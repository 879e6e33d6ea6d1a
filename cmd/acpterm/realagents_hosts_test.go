//go:build realagents

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/agents"
)

// TestRealAgentsDefaultHosts takes each real agent through the scripted
// turn with no network flag at all: confined by default, and so limited
// to its hosts list by default, which an agents.json entry sets to the
// model server's address (standing for the agent's API host; every
// scripted run has that entry, see modelHostsConfig). Its commands get
// no host; what the agent asked for beyond its list is in
// the log, as the refusals on stderr.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR ACPTERM_REAL_AGENTS_ONLY=codex,claude \
//	    go test -tags realagents ./cmd/acpterm -run TestRealAgentsDefaultHosts -v
func TestRealAgentsDefaultHosts(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for i, a := range scriptedAgents {
		if only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			if modelHostsConfig(t, a.name, "http://127.0.0.1:1") == "" {
				t.Skip("not a named agent")
			}
			s := runScripted(t, bin, a, nil, fmt.Sprintf("%shosts%d", a.name, i), "")
			r := s.r
			t.Logf("exit %d after %v; tool called %v, ran %v\nstdout:\n%.3000s\nstderr:\n%.3000s",
				r.code, r.elapsed.Round(time.Millisecond), s.called, s.ran, r.stdout, r.stderr)
			if !strings.Contains(r.stderr, "network limited to no host through acpterm's proxy (the agent also reaches ") ||
				!strings.Contains(r.stderr, "by default for a confined agent") {
				t.Errorf("stderr lacks the confinement line with the agent's list, by default")
			}
			if r.code != 0 || !s.ran {
				t.Errorf("the turn did not complete confined to the agent's hosts: exit %d, the command's output back %v", r.code, s.ran)
			}
		})
	}
}

// modelHostsConfig is the agents.json of a scripted run of the named
// agent: its built-in command, with the model server's address (url's
// host:port) as its hosts list, standing for its API hosts: a confined
// agent is limited to that list by default, and nothing it sends
// through the proxy leaves the machine. "" for a name acpterm does not
// know, and for omp: it locks its session files with abstract unix
// sockets, which a sandbox limited to a list refuses (seccomp cannot tell
// them from the host's pathname sockets), so it has no list and runs with
// the network as the host has it, as it does for a user.
func modelHostsConfig(t testing.TB, name, url string) string {
	if name == "omp" {
		return ""
	}
	builtin, err := agents.Load(filepath.Join(t.TempDir(), "none.json"))
	if err != nil {
		t.Fatal(err)
	}
	entry, ok := builtin.Lookup(name)
	if !ok || len(entry.Command) == 0 {
		return ""
	}
	b, err := json.Marshal(map[string]any{name: map[string]any{"command": entry.Command, "allowHosts": []string{strings.TrimPrefix(url, "http://")}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
