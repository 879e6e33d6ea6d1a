package terminal

import (
	"net/url"
	"slices"
	"strings"
)

// secretWords are the parts of a variable's name that mark it as a
// credential: API keys, tokens, passwords, authentication settings and
// credential files. The match is on the upper-cased name, anywhere in it
// (OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD,
// NPM_AUTH, DOCKER_AUTH_CONFIG, GOOGLE_APPLICATION_CREDENTIALS), so it errs
// towards dropping: KEYTIMEOUT and XAUTHORITY go too.
var secretWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "AUTH", "CREDENTIAL", "COOKIE"}

// secretSuffixes end a name that marks a credential although the word is
// too short to look for anywhere: GITHUB_PAT (not PATH), SENTRY_DSN.
var secretSuffixes = []string{"_PAT", "_DSN"}

// notSecret are names that contain a secret word but carry none:
// SSH_AUTH_SOCK is the path of the user's ssh agent, which commands such
// as git need to reach a remote, and which holds no key itself.
var notSecret = []string{"SSH_AUTH_SOCK"}

// IsSecretName reports whether an environment variable's name marks it as
// a credential (see WithoutSecrets).
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	if slices.Contains(notSecret, up) {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(up, s) || up == s[1:] {
			return true
		}
	}
	return false
}

// IsSecretValue reports whether a variable's value carries a credential
// whatever its name: a URL with a password in it
// (DATABASE_URL=postgres://user:pw@host/db, a proxy with its login).
func IsSecretValue(value string) bool {
	// Cheap checks first: most values are not URLs with a login.
	scheme, rest, ok := strings.Cut(value, "://")
	if !ok || scheme == "" || !strings.Contains(rest, "@") {
		return false
	}
	u, err := url.Parse(value)
	if err != nil || u.User == nil {
		// A value url.Parse refuses may still hold user:password@ in its
		// authority: judge by the text before the first '@' of it.
		auth, _, _ := strings.Cut(rest, "/")
		userinfo, _, found := strings.Cut(auth, "@")
		return found && strings.Contains(userinfo, ":")
	}
	_, has := u.User.Password()
	return has
}

// WithoutSecrets returns env (NAME=VALUE entries) without the variables
// that carry credentials, except those named in keep: those whose names
// mark them as credentials (IsSecretName) and those whose values are URLs
// with a password (IsSecretValue). It is meant for Options.Env: an agent
// needs its own API key, the commands it asks a client to run do not, and
// whatever reaches them can be sent anywhere the network goes. The names
// dropped are returned too, sorted, so that a host can say what it
// withheld.
func WithoutSecrets(env []string, keep ...string) (kept []string, dropped []string) {
	kept = make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if name != "" && (IsSecretName(name) || IsSecretValue(value)) && !slices.ContainsFunc(keep, func(k string) bool { return envKey(k) == envKey(name) }) {
			dropped = append(dropped, name)
			continue
		}
		kept = append(kept, kv)
	}
	slices.Sort(dropped)
	return kept, slices.Compact(dropped)
}
