package agents

import "testing"

// TestKeysFor: each profiled agent's key variables; a key that can be
// masked has a base-URL variable and a default https URL, one that
// cannot says why.
func TestKeysFor(t *testing.T) {
	for prog := range profiles {
		for _, k := range KeysFor([]string{"/usr/bin/" + prog}) {
			switch {
			case k.Var == "":
				t.Errorf("%s: a key without a variable", prog)
			case k.BaseURL == "" && k.NotMasked == "":
				t.Errorf("%s: %s has no base URL and no reason", prog, k.Var)
			case k.BaseURL != "" && (len(k.Default) < 9 || k.Default[:8] != "https://"):
				t.Errorf("%s: %s's default %q is not an https URL", prog, k.Var, k.Default)
			}
		}
	}
	if k := KeysFor([]string{"npx", "@agentclientprotocol/claude-agent-acp"}); len(k) != 2 || k[0].BaseURL != "ANTHROPIC_BASE_URL" {
		t.Errorf("claude through npx: %v", k)
	}
	if k := KeysFor([]string{"my-agent"}); k != nil {
		t.Errorf("an agent without a profile: %v", k)
	}
}
