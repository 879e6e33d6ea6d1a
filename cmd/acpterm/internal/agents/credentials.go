package agents

import "slices"

// credentials are the files in which each profiled agent keeps its login,
// by the program the agent runs as. Each was read in the agent's own code
// (see sandbox.AgentCredentials, which lists them at their default
// places): a confined agent reads its own and none of the others', and
// the commands run for it read none.
var credentials = map[string][]PathSpec{
	"claude-agent-acp": {{Env: "CLAUDE_CONFIG_DIR", Under: ".credentials.json", Rel: ".claude/.credentials.json"}},
	"codex-acp":        {{Env: "CODEX_HOME", Under: "auth.json", Rel: ".codex/auth.json"}},
	// gemini-cli's OAuth login, its encrypted file store, and the
	// tokens of MCP and A2A servers (gemini's own sandbox profiles deny
	// reading these).
	"gemini": {
		{Env: "GEMINI_CLI_HOME", Under: ".gemini/oauth_creds.json", Rel: ".gemini/oauth_creds.json"},
		{Env: "GEMINI_CLI_HOME", Under: ".gemini/gemini-credentials.json", Rel: ".gemini/gemini-credentials.json"},
		{Env: "GEMINI_CLI_HOME", Under: ".gemini/mcp-oauth-tokens.json", Rel: ".gemini/mcp-oauth-tokens.json"},
		{Env: "GEMINI_CLI_HOME", Under: ".gemini/a2a-oauth-tokens.json", Rel: ".gemini/a2a-oauth-tokens.json"},
	},
	"opencode": {{Base: DataHome, Rel: "opencode/auth.json"}, {Base: DataHome, Rel: "opencode/mcp-auth.json"}},
	"qwen":     {{Env: "QWEN_HOME", Under: "oauth_creds.json", Rel: ".qwen/oauth_creds.json"}},
	// omp keeps its logins in a SQLite database, with its settings.
	"omp":    {{Rel: ".omp/agent/agent.db"}, {Rel: ".omp/agent/agent.db-wal"}, {Rel: ".omp/agent/agent.db-shm"}},
	"pi-acp": {{Env: "PI_CODING_AGENT_DIR", Under: "auth.json", Rel: ".pi/agent/auth.json"}},
}

func init() {
	for prog, c := range credentials {
		p := profiles[prog]
		p.Credentials = c
		profiles[prog] = p
	}
}

// AllCredentials are the credential files of every profiled agent, where
// the environment of getenv puts them: what no command, and no confined
// agent but their own, may read.
func AllCredentials(getenv func(string) string) []string {
	var out []string
	for _, c := range credentials {
		for _, s := range c {
			if p := s.resolve(getenv); p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}
