package terminal

import (
	"slices"
	"strings"
)

// secretWords are the parts of a variable's name that mark it as a
// credential: API keys, tokens, passwords. The match is on the upper-cased
// name, anywhere in it (OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY,
// PGPASSWORD), so it errs towards dropping: KEYTIMEOUT goes too.
var secretWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD"}

// IsSecretName reports whether an environment variable's name marks it as
// a credential (see WithoutSecrets).
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// WithoutSecrets returns env (NAME=VALUE entries) without the variables
// whose names mark them as credentials (IsSecretName), except those named
// in keep. It is meant for Options.Env: an agent needs its own API key,
// the commands it asks a client to run do not, and whatever reaches them
// can be sent anywhere the network goes. The names dropped are returned
// too, sorted, so that a host can say what it withheld.
func WithoutSecrets(env []string, keep ...string) (kept []string, dropped []string) {
	kept = make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != "" && IsSecretName(name) && !slices.ContainsFunc(keep, func(k string) bool { return envKey(k) == envKey(name) }) {
			dropped = append(dropped, name)
			continue
		}
		kept = append(kept, kv)
	}
	slices.Sort(dropped)
	return kept, slices.Compact(dropped)
}
