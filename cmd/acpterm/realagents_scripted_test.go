//go:build realagents

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scriptedAgent points one real agent at the model server: the files its
// fresh home needs, its environment, and the words after its name.
type scriptedAgent struct {
	name  string
	files func(url string) map[string]string // relative to HOME
	env   func(url string) []string
	args  []string
	// silent: the agent sends none of its command's output over ACP
	// (gemini's tool call carries content: []), so none can be shown.
	silent bool
	// saves is where, relative to HOME, the agent keeps a session it
	// ran (matchSaved's pattern): TestRealAgentsWrites checks that it
	// still does when confined.
	saves string
	// unconfinedOnly are files (matchSaved's patterns, relative to HOME)
	// the agent writes unconfined and not confined, each for a reason
	// given beside it: mostly what its profile keeps read-only on purpose
	// (what an unconfined run would later execute or load), which the
	// agent works without.
	unconfinedOnly []string
	// confinedMode is the mode acpterm switches the agent's session to
	// when it confines it (its profile's ConfinedModes); unconfined, the
	// agent's own default stays.
	confinedMode string
	// command, when set, is the shell line the model asks for instead of
	// the model server's own (whose output proves it ran).
	command string
	// prefer, when set, is the model server's Prefer: the tool it calls
	// rather than the agent's shell.
	prefer func(name string) bool
}

var scriptedAgents = []scriptedAgent{
	{name: "codex", saves: ".codex/sessions/**/rollout-*.jsonl", confinedMode: "agent-full-access",
		// The skills codex installs from its binary, under skills/,
		// which is read-only: what a skill says, codex's model runs.
		unconfinedOnly: []string{".codex/skills/.system/**/*"},
		files: func(url string) map[string]string {
			return map[string]string{".codex/config.toml": fmt.Sprintf(`model = "mock-model"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
`, url)}
		},
		env: func(string) []string { return []string{"OPENAI_API_KEY=dummy"} }},
	{name: "claude", saves: ".claude/projects/*/*.jsonl",
		unconfinedOnly: []string{
			// plugins/ is read-only confined (plugins bring hooks and
			// MCP servers); Claude Code records its built-in one there.
			".claude/plugins/**/*",
			// A backup of ~/.claude.json, which it makes when it finds
			// none and creates it; confined, acpterm has created it
			// first (holding {}), as the profile says.
			".claude/backups/.claude.json.backup.*",
		},
		env: func(url string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		}},
	{name: "gemini", saves: ".gemini/tmp/*/chats/session-*.jsonl",
		files: func(string) map[string]string {
			return map[string]string{".gemini/settings.json": `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`}
		},
		env:    func(url string) []string { return []string{"GEMINI_API_KEY=dummy", "GOOGLE_GEMINI_BASE_URL=" + url} },
		silent: true},
	{name: "opencode", saves: ".local/share/opencode/opencode.db",
		files: func(url string) map[string]string {
			return map[string]string{".config/opencode/opencode.json": fmt.Sprintf(`{
  "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "mock",
    "options": {"baseURL": "%s/v1", "apiKey": "dummy"},
    "models": {"mock-model": {"name": "mock-model", "tool_call": true}}}},
  "model": "mock/mock-model", "small_model": "mock/mock-model"
}`, url)}
		},
		env: func(string) []string {
			return []string{"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}
		}},
	{name: "qwen", saves: ".qwen/projects/*/chats/*.jsonl",
		// extensions/ is read-only confined (extensions bring MCP
		// servers and commands).
		unconfinedOnly: []string{".qwen/extensions/extension-enablement.json"},
		env: func(url string) []string {
			return []string{"OPENAI_API_KEY=dummy", "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_MODEL=mock-model"}
		}},
	{name: "omp", saves: ".omp/agent/sessions/*/*.jsonl",
		files: func(url string) map[string]string {
			return map[string]string{".omp/agent/models.yml": fmt.Sprintf(`providers:
  mock:
    baseUrl: %s/v1
    apiKey: dummy
    api: openai-completions
    models:
      - id: mock-model
        supportsTools: true
`, url)}
		},
		args: []string{"--model", "mock/mock-model"}},
	{name: "pi", saves: ".pi/agent/sessions/*/*.jsonl",
		files: func(url string) map[string]string {
			return map[string]string{
				".pi/agent/models.json": fmt.Sprintf(`{"providers": {"mock": {"baseUrl": "%s/v1", "api": "openai-completions", "apiKey": "dummy",
  "compat": {"supportsDeveloperRole": false}, "models": [{"id": "mock-model"}]}}}`, url),
				".pi/agent/settings.json": `{"defaultProvider": "mock", "defaultModel": "mock-model"}`,
			}
		}},
}

// sandboxVariants are the ways a scripted turn is run: the agent left
// unconfined, confined by asking, the default for a named agent (which
// is confined: every one of them has a profile), and read-only (the
// agent writes its own state alone, and its command, a printf, nothing).
var sandboxVariants = []struct {
	name string
	flag []string
	want string // the confinement line
}{
	{"unsandboxed", []string{"--sandbox-agent=false"}, ""}, // no line without a terminal
	{"sandboxed", []string{"--sandbox-agent"}, "sandbox: agent and its commands: workspace-write"},
	{"default", nil, "sandbox: agent and its commands: workspace-write"},
	{"read-only", []string{"--sandbox", "read-only"}, "sandbox: agent and its commands: read-only"},
}

// scriptedRun is one turn of a real agent against the model server, in a
// fresh home and workspace.
type scriptedRun struct {
	r      result
	called bool // the server sent the shell tool call
	ran    bool // and got its output back: the command ran
	m      *modelServer
	home   string // the fresh HOME it ran in
	ws     string // and the workspace
	start  time.Time
}

// cache, when set, is XDG_CACHE_HOME, kept across runs as a user's is;
// "" is one in the fresh home. extraEnv is added last.
func runScripted(t *testing.T, bin string, a scriptedAgent, flags []string, marker, cache string, extraEnv ...string) scriptedRun {
	t.Helper()
	return runScriptedAs(t, bin, a, append([]string{a.name}, a.args...), flags, marker, cache, extraEnv...)
}

// runScriptedAs is runScripted with the agent given as the words after
// acpterm run's flags: its name, or -- and a command line. A flag
// modelAddr stands for the model server's host:port.
func runScriptedAs(t *testing.T, bin string, a scriptedAgent, agent, flags []string, marker, cache string, extraEnv ...string) scriptedRun {
	t.Helper()
	m := newModelServer(marker)
	defer m.Close()
	flags = slices.Clone(flags)
	for i, f := range flags {
		if f == modelAddr {
			flags[i] = strings.TrimPrefix(m.URL(), "http://")
		}
	}
	if a.command != "" {
		m.Command = a.command
	}
	m.Prefer = a.prefer
	env, home := scriptedEnv(t, bin, a, m, flags, cache, extraEnv...)
	const turnTimeout = 90 * time.Second
	args := append([]string{"run", "--approve-all", "--turn-timeout", turnTimeout.String()}, flags...)
	args = append(args, "-p", "Run the command, then say what it printed.")
	args = append(args, agent...)
	ws := t.TempDir()
	start := time.Now()
	r := runBinary(t, acptermBin, opts{env: env, dir: ws, bound: turnTimeout + 60*time.Second}, args...)
	called, ran := m.ToolCalled()
	return scriptedRun{r: r, called: called, ran: ran, m: m, home: home, ws: ws, start: start}
}

// scriptedEnv makes a fresh home for a's run against m, with the files
// it needs, and returns acpterm's environment for the run (flags are
// acpterm run's; cache is as runScripted's) and the home.
func scriptedEnv(t testing.TB, bin string, a scriptedAgent, m *modelServer, flags []string, cache string, extraEnv ...string) ([]string, string) {
	t.Helper()
	home := t.TempDir()
	files := filesOf(a, m.URL())
	if conf := modelHostsConfig(t, a.name, m.URL()); conf != "" {
		if files == nil {
			files = map[string]string{}
		}
		files[filepath.Join(".config", "acpterm", "agents.json")] = conf
	}
	for rel, body := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"NO_COLOR=1",
	}
	if cache == "" {
		cache = filepath.Join(home, ".cache")
	}
	env = append(env, "XDG_CACHE_HOME="+cache)
	if a.env != nil {
		env = append(env, a.env(m.URL())...)
	}
	if a.name == "claude" && os.Geteuid() == 0 && slices.Contains(flags, "--sandbox-agent=false") {
		// Unconfined as root, Claude Code needs to be told it may run
		// (acpterm says so itself when it confines it).
		env = append(env, "IS_SANDBOX=1")
	}
	return append(env, extraEnv...), home
}

func filesOf(a scriptedAgent, url string) map[string]string {
	if a.files == nil {
		return nil
	}
	return a.files(url)
}

// TestRealAgentsScripted takes each of the seven real agents through a
// turn that runs a shell command with the agent's own tool, against the
// scripted model server, unconfined, confined, and by default; and checks
// what a user sees: exit 0, the reply, the command's output on the screen,
// and the line saying what is confined.
//
//	ACPTERM_REAL_AGENTS=1 [ACPTERM_REAL_AGENTS_DIR=DIR] go test ./cmd/acpterm -run TestRealAgentsScripted -v
//
// ACPTERM_REAL_AGENTS_ONLY=codex,claude limits it to some agents.
func TestRealAgentsScripted(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	for _, a := range scriptedAgents {
		if only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			for i, v := range sandboxVariants {
				t.Run(v.name, func(t *testing.T) {
					s := runScripted(t, bin, a, v.flag, fmt.Sprintf("%s%d", a.name, i), "")
					r := s.r
					t.Logf("exit %d after %v; tool called %v, ran %v\nstdout:\n%.4000s\nstderr:\n%.4000s",
						r.code, r.elapsed.Round(time.Millisecond), s.called, s.ran, r.stdout, r.stderr)
					if r.code != 0 {
						t.Errorf("exit %d, want 0", r.code)
					}
					want := v.want
					if want == "" && strings.Contains(r.stderr, "acpterm: sandbox:") || !strings.Contains(r.stderr, want) {
						t.Errorf("stderr %q, want the confinement line %q", r.stderr, want)
					}
					if !s.ran {
						t.Errorf("the model server never got the command's output back (tool called: %v)", s.called)
					}
					if !strings.Contains(r.stdout, s.m.Reply) {
						t.Errorf("stdout lacks the reply %q", s.m.Reply)
					}
					if !a.silent && !strings.Contains(r.stdout, s.m.Output) {
						t.Errorf("stdout lacks the command's output %q", s.m.Output)
					}
					if a.confinedMode != "" {
						switched := strings.Contains(r.stdout, "mode "+a.confinedMode+" ")
						if confined := v.name != "unsandboxed"; switched != confined {
							t.Errorf("confined %v, but the session's mode line says %q: want mode %s only when confined", confined, firstLine(r.stdout, "mode "), a.confinedMode)
						}
					}
				})
			}
		})
	}
}

// TestRealAgentsSandboxCost measures each agent's scripted turn
// unconfined and confined, alternated, N runs each (ACPTERM_REAL_AGENTS_RUNS,
// default 5), and logs the medians and their ratio; a ratio above 1.1 is
// an error.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test ./cmd/acpterm -run TestRealAgentsSandboxCost -v
func TestRealAgentsSandboxCost(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" || os.Getenv("ACPTERM_REAL_AGENTS_RUNS") == "" {
		t.Skipf("set %s=1 and ACPTERM_REAL_AGENTS_RUNS=N to measure the sandbox's cost on real agents", realAgentsEnv)
	}
	n, err := strconv.Atoi(os.Getenv("ACPTERM_REAL_AGENTS_RUNS"))
	if err != nil || n < 1 || n > 50 {
		t.Fatalf("ACPTERM_REAL_AGENTS_RUNS=%q: want 1 to 50", os.Getenv("ACPTERM_REAL_AGENTS_RUNS"))
	}
	bin := installRealAgents(t)
	only := os.Getenv("ACPTERM_REAL_AGENTS_ONLY")
	var table strings.Builder
	table.WriteString("| agent | unsandboxed median s | sandboxed median s | ratio |\n| --- | --- | --- | --- |\n")
	for _, a := range scriptedAgents {
		if only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
			continue
		}
		var off, on []time.Duration
		// One cache for the agent's runs, as on a user's machine: /tmp,
		// where the unconfined runs keep theirs, is shared as well.
		cache := t.TempDir()
		for i := range n {
			for _, v := range sandboxVariants[:2] {
				s := runScripted(t, bin, a, v.flag, fmt.Sprintf("%sb%d", a.name, i), cache)
				if s.r.code != 0 {
					t.Errorf("%s %s: exit %d\n%.2000s", a.name, v.name, s.r.code, s.r.stderr)
				}
				if v.name == "unsandboxed" {
					off = append(off, s.r.elapsed)
				} else {
					on = append(on, s.r.elapsed)
				}
			}
		}
		t.Logf("%s: unsandboxed %v, sandboxed %v", a.name, roundAll(off), roundAll(on))
		mo, mn := medianDuration(off), medianDuration(on)
		ratio := mn.Seconds() / mo.Seconds()
		fmt.Fprintf(&table, "| %s | %.2f | %.2f | %.2f |\n", a.name, mo.Seconds(), mn.Seconds(), ratio)
		if ratio > 1.1 {
			t.Errorf("%s: sandboxed median %v is %.2f× the unsandboxed %v", a.name, mn, ratio, mo)
		}
	}
	t.Logf("%d runs each, alternated:\n%s", n, table.String())
}

func medianDuration(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// firstLine is the first line of s that starts with prefix, or "".
func firstLine(s, prefix string) string {
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestRealAgentsModeChoices: --mode with a mode codex does not offer is a
// usage error (exit 2) that lists the modes codex-acp offers, confined or
// not, and nothing is sent to the model.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsModeChoices -v
func TestRealAgentsModeChoices(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	i := slices.IndexFunc(scriptedAgents, func(a scriptedAgent) bool { return a.name == "codex" })
	for _, flags := range [][]string{nil, {"--sandbox-agent=false"}} {
		s := runScripted(t, bin, scriptedAgents[i], append(flags, "--mode", "danger"), "codex-mode", "")
		const want = `--mode danger: the agent offers no such value for mode; it offers read-only, workspace-write, agent, agent-full-access`
		if s.r.code != 2 || !strings.Contains(s.r.stderr, want) || s.called {
			t.Errorf("%q: exit %d, model called %v; want 2, none, and %q\nstderr:\n%s", flags, s.r.code, s.called, want, s.r.stderr)
		}
	}
}

// TestRealAgentsConfinedFailure: codex and claude, confined by default,
// are asked by their model to write outside the writable paths; acpterm's
// sandbox refuses, and the run exits 6 saying so, where unconfined the
// same turn exits 0. A command that fails on its own (a missing
// directory) exits 0 confined too. claude runs in its mode "default"
// (asking, and --approve-all allows), since its default "auto" mode asks
// the model server to classify the command, which it cannot answer, and
// blocks it before it runs.
//
//	ACPTERM_REAL_AGENTS=1 ACPTERM_REAL_AGENTS_DIR=DIR go test -tags realagents ./cmd/acpterm -run TestRealAgentsConfinedFailure -v
func TestRealAgentsConfinedFailure(t *testing.T) {
	if os.Getenv(realAgentsEnv) == "" {
		t.Skipf("set %s=1 to install the real agents from npm and run them", realAgentsEnv)
	}
	bin := installRealAgents(t)
	for _, name := range []string{"codex", "claude"} {
		i := slices.IndexFunc(scriptedAgents, func(a scriptedAgent) bool { return a.name == name })
		a := scriptedAgents[i]
		var mode []string
		if name == "claude" {
			mode = []string{"--mode", "default"}
		}
		for _, tt := range []struct {
			name    string
			command string
			flags   []string
			code    int
		}{
			{"confined, a write to HOME", "touch \"$HOME/acpterm-outside\"", nil, 6},
			{"unconfined, a write to HOME", "touch \"$HOME/acpterm-outside\"", []string{"--sandbox-agent=false"}, 0},
			{"confined, a missing directory", "touch /nonexistent-acpterm-dir/x", nil, 0},
		} {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				a.command = tt.command
				s := runScripted(t, bin, a, append(slices.Clone(mode), tt.flags...), name+"-refused", "")
				t.Logf("exit %d\nstdout:\n%.3000s\nstderr:\n%.3000s", s.r.code, s.r.stdout, s.r.stderr)
				if s.r.code != tt.code || !s.called {
					t.Errorf("exit %d (tool called %v), want %d", s.r.code, s.called, tt.code)
				}
				said := strings.Contains(s.r.stderr, "failed in acpterm's sandbox")
				if said != (tt.code == 6) || tt.code == 6 && !strings.Contains(s.r.stderr, "--writable PATH") {
					t.Errorf("stderr says the sandbox refused: %v, want %v, with what widens it", said, tt.code == 6)
				}
			})
		}
	}
}
