package agents

import "slices"

// APIKey is one variable from which a profiled agent reads the key to its
// model API, and how that agent is pointed at the host the key goes to:
// what acpterm needs to mask the key (the agent gets a sentinel in its
// place, and a base URL that leads to acpterm, which puts the key back
// toward that host alone).
type APIKey struct {
	// Var is the key's variable.
	Var string
	// Header is how the agent sends it ("x-api-key", "Authorization:
	// Bearer", …), for the record.
	Header string
	// BaseURL is the variable that moves the agent's API host; "" when
	// the agent takes the host from a file of its own (then the key is
	// not masked: NotMasked says why).
	BaseURL string
	// Default is the URL the agent uses when BaseURL is unset.
	Default string
	// NotMasked says why the key cannot be masked ("" when it can).
	NotMasked string
}

// Why a key cannot be masked, per agent.
const (
	codexNoBaseURL    = "codex-acp takes its API host from config.toml (model_providers), not from a variable"
	vertexNoBaseURL   = "gemini uses it for Vertex AI, whose host depends on the project's location"
	opencodeNoBaseURL = "opencode takes its providers' hosts from opencode.json, not from a variable"
	ompNoBaseURL      = "omp takes its providers' hosts from ~/.omp/agent/models.yml, not from a variable"
	piNoBaseURL       = "pi takes its providers' hosts from ~/.pi/agent/models.json, not from a variable"
)

// apiKeys are the key variables of each profiled agent, keyed as
// profiles are, each read in the agent's own code (the packages named in
// ACP-NOTES §12):
//   - claude-agent-acp (Claude Code): ANTHROPIC_API_KEY (x-api-key) and
//     ANTHROPIC_AUTH_TOKEN (Authorization: Bearer), toward
//     ANTHROPIC_BASE_URL, else https://api.anthropic.com;
//   - codex-acp 2.6: CODEX_API_KEY, then OPENAI_API_KEY (readApiKeyFromEnv);
//     its host comes from config.toml's provider, else
//     https://api.openai.com/v1, and no variable moves it;
//   - gemini-cli: GEMINI_API_KEY (x-goog-api-key) toward
//     GOOGLE_GEMINI_BASE_URL; GOOGLE_API_KEY is Vertex AI's
//     (GOOGLE_VERTEX_BASE_URL, else a host by location);
//   - qwen-code: OPENAI_API_KEY toward OPENAI_BASE_URL, else
//     https://api.openai.com/v1 (DEFAULT_OPENAI_BASE_URL);
//   - opencode, omp, pi: the providers' own variables (pi-ai's
//     getApiKeyEnvVars: ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY,
//     …), with hosts from their own configuration files.
var apiKeys = map[string][]APIKey{
	"claude-agent-acp": {
		{Var: "ANTHROPIC_API_KEY", Header: "x-api-key", BaseURL: "ANTHROPIC_BASE_URL", Default: "https://api.anthropic.com"},
		{Var: "ANTHROPIC_AUTH_TOKEN", Header: "Authorization: Bearer", BaseURL: "ANTHROPIC_BASE_URL", Default: "https://api.anthropic.com"},
	},
	"codex-acp": {
		{Var: "CODEX_API_KEY", Header: "Authorization: Bearer", NotMasked: codexNoBaseURL},
		{Var: "OPENAI_API_KEY", Header: "Authorization: Bearer", NotMasked: codexNoBaseURL},
	},
	"gemini": {
		{Var: "GEMINI_API_KEY", Header: "x-goog-api-key", BaseURL: "GOOGLE_GEMINI_BASE_URL", Default: "https://generativelanguage.googleapis.com"},
		{Var: "GOOGLE_API_KEY", Header: "x-goog-api-key", NotMasked: vertexNoBaseURL},
	},
	"qwen": {
		{Var: "OPENAI_API_KEY", Header: "Authorization: Bearer", BaseURL: "OPENAI_BASE_URL", Default: "https://api.openai.com/v1"},
	},
	"opencode": providerKeys(opencodeNoBaseURL),
	"omp":      providerKeys(ompNoBaseURL),
	"pi-acp":   providerKeys(piNoBaseURL),
}

// providerKeys are the usual providers' key variables, not masked for
// why.
func providerKeys(why string) []APIKey {
	var out []APIKey
	for _, v := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"} {
		out = append(out, APIKey{Var: v, NotMasked: why})
	}
	return out
}

// KeysFor are the API-key variables of the agent started by command, by
// its profile (nil for an agent without one).
func KeysFor(command []string) []APIKey {
	key, _ := profileKey(command)
	return slices.Clone(apiKeys[key])
}
