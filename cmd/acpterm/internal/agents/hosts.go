package agents

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/sandbox"
)

// apiHosts are the hosts each profiled agent itself talks to (its model
// API and its sign-in), keyed as profiles are: what a confined agent may
// reach when the network is limited to a list (acpterm run --allow-host,
// or --network proxy), on top of the run's own list, which its commands
// get alone. They come from the agents' and their providers' documented
// endpoints, not from watching the agents here; an agents.json entry's
// "allowHosts" replaces them.
//
// Narrow on purpose: a wildcard over a cloud's shared domain
// (*.googleapis.com holds storage.googleapis.com, where anyone can
// write) would be a way out for whatever the agent was told to send.
var apiHosts = map[string][]string{
	"claude-agent-acp": {"api.anthropic.com", "*.anthropic.com", "claude.ai", "*.claude.ai", "claude.com", "*.claude.com"},
	"codex-acp":        {"api.openai.com", "auth.openai.com", "chatgpt.com", "*.chatgpt.com"},
	"gemini": {"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com",
		"accounts.google.com", "www.googleapis.com"},
	"opencode": {"opencode.ai", "*.opencode.ai", "models.dev", "api.anthropic.com", "api.openai.com", "openrouter.ai"},
	"qwen":     {"dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "chat.qwen.ai", "portal.qwen.ai"},
}

// npmRegistry is where npx fetches an agent's package.
const npmRegistry = "registry.npmjs.org"

// maxHosts bounds an agents.json entry's allowHosts.
const maxHosts = 64

// HostsFor is the host list of the agent started by command (named name,
// "" when it was given as a command): its entry's allowHosts in
// agents.json when it has some, else its profile's API hosts, with npm's
// registry (and those the user configured, see npmRegistries) for an
// agent run through npx. nil for an agent with neither.
func (r *Registry) HostsFor(name string, command []string) []string {
	if a, ok := r.Lookup(name); ok && name != "" && a.AllowHosts != nil {
		return slices.Clone(a.AllowHosts)
	}
	key, npx := profileKey(command)
	hosts := slices.Clone(apiHosts[key])
	if hosts != nil && npx {
		home, _ := os.UserHomeDir()
		hosts = append(hosts, npmRegistries(os.Getenv, home)...)
	}
	return hosts
}

// checkHosts checks an entry's allowHosts.
func checkHosts(hosts []string) error {
	if len(hosts) > maxHosts {
		return fmt.Errorf("more than %d allowHosts", maxHosts)
	}
	if err := sandbox.CheckAllowHosts(hosts); err != nil {
		return fmt.Errorf("allowHosts: %v", strings.TrimPrefix(err.Error(), "sandbox: AllowHosts: "))
	}
	return nil
}
