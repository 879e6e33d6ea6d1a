package sandbox

import (
	"bytes"
	"path/filepath"
	"strings"
)

// Secrets is a read-deny list for Policy: what a confined command may not
// read (Hidden), what stays readable below it (Readable) and which files
// it sees without their credential lines (Redacted). DefaultSecrets gives
// the usual one.
type Secrets struct {
	Hidden   []string
	Readable []string
	Redacted []string
}

// Apply sets p's Hidden, Readable and Redacted to s's (copies), adding
// to what p already re-allows with Readable.
func (s Secrets) Apply(p *Policy) {
	p.Hidden = append([]string{}, s.Hidden...)
	p.Readable = append(append([]string(nil), p.Readable...), s.Readable...)
	p.Redacted = append([]string(nil), s.Redacted...)
}

// AgentCredentials are the files in which the agents acpterm knows keep
// their logins, relative to the home directory, where they keep them when
// no variable moves their state. Each was read in the agent's own code:
//
//	.codex/auth.json                  codex (CODEX_HOME/auth.json)
//	.claude/.credentials.json         Claude Code (CLAUDE_CONFIG_DIR/.credentials.json)
//	.gemini/oauth_creds.json          gemini-cli, and its gemini-credentials.json,
//	                                  mcp-oauth-tokens.json, a2a-oauth-tokens.json
//	.qwen/oauth_creds.json            qwen-code
//	.local/share/opencode/auth.json   opencode (XDG_DATA_HOME/opencode), and mcp-auth.json
//	.pi/agent/auth.json               pi (PI_CODING_AGENT_DIR/auth.json)
//	.omp/agent/agent.db               omp: a SQLite database of settings and
//	                                  logins, with its -wal and -shm files
var AgentCredentials = []string{
	".codex/auth.json",
	".claude/.credentials.json",
	".gemini/oauth_creds.json",
	".gemini/gemini-credentials.json",
	".gemini/mcp-oauth-tokens.json",
	".gemini/a2a-oauth-tokens.json",
	".qwen/oauth_creds.json",
	".local/share/opencode/auth.json",
	".local/share/opencode/mcp-auth.json",
	".pi/agent/auth.json",
	".omp/agent/agent.db",
	".omp/agent/agent.db-wal",
	".omp/agent/agent.db-shm",
}

// secretNames are the user's credentials below the home directory that
// DefaultSecrets hides: keys and tokens of ssh, the clouds, container
// registries, git and package hosts, gpg, password stores, and browser
// profiles (cookies, saved passwords).
var secretNames = []string{
	".ssh",
	".aws",
	".azure",
	".config/gcloud",
	".kube",
	".docker/config.json",
	".netrc",
	".git-credentials",
	".config/git/credentials",
	".gnupg",
	".pypirc",
	".password-store",
	".mozilla",
	".config/google-chrome",
	".config/chromium",
	".config/BraveSoftware",
}

// sshReadable are the files of ~/.ssh that stay readable: what ssh and
// git need to connect through an agent socket, none of it secret.
var sshReadable = []string{"known_hosts", "known_hosts2", "config"}

// DefaultSecrets is the usual read-deny list for a user whose home
// directory is home: Hidden holds ~/.ssh (its known_hosts, config and
// public keys *.pub stay readable, in Readable, so that ssh and git work
// with an agent socket), ~/.aws, ~/.azure, ~/.config/gcloud, ~/.kube,
// ~/.docker/config.json, ~/.netrc, ~/.git-credentials and
// ~/.config/git/credentials, ~/.gnupg, ~/.pypirc, ~/.password-store, the
// browser profiles of Firefox, Chrome, Chromium and Brave, and the
// agents' own logins (AgentCredentials); Redacted holds ~/.npmrc, seen
// without its token lines (RedactNpmrc). Paths that do not exist are
// skipped by Wrap; the public keys are those that exist now. An empty or
// relative home gives an empty list.
func DefaultSecrets(home string) Secrets {
	if home == "" || !filepath.IsAbs(home) {
		return Secrets{Hidden: []string{}}
	}
	home = filepath.Clean(home)
	var s Secrets
	for _, n := range secretNames {
		s.Hidden = append(s.Hidden, filepath.Join(home, n))
	}
	for _, n := range AgentCredentials {
		s.Hidden = append(s.Hidden, filepath.Join(home, n))
	}
	ssh := filepath.Join(home, ".ssh")
	for _, n := range sshReadable {
		s.Readable = append(s.Readable, filepath.Join(ssh, n))
	}
	pubs, _ := filepath.Glob(filepath.Join(ssh, "*.pub"))
	s.Readable = append(s.Readable, pubs...)
	s.Redacted = []string{filepath.Join(home, ".npmrc")}
	return s
}

// npmrcSecretKeys are the settings of an .npmrc that carry a credential,
// alone or after a "//registry/path/:" prefix, in lower case.
var npmrcSecretKeys = []string{"_authtoken", "_auth", "_password", "password", "_token"}

// RedactNpmrc returns b, an .npmrc, without the lines that set a
// credential: _authToken, _auth, _password (and the old password and
// _token), whether global or scoped to a registry
// ("//registry.example.com/:_authToken=…"), quoted or not, in any case.
// Every other line (registries, scopes, proxies, comments) is kept as it
// was, byte for byte; removed counts the lines taken out.
func RedactNpmrc(b []byte) (out []byte, removed int) {
	out = make([]byte, 0, len(b))
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		if npmrcSecretLine(line) {
			removed++
			continue
		}
		out = append(out, line...)
	}
	return out, removed
}

// npmrcSecretLine reports whether line (with its newline) sets one of
// npmrcSecretKeys. npm reads a line's key up to the first '=', trimmed,
// unquoted, a "[]" suffix marking an array; a line without '=' sets its
// key to true.
func npmrcSecretLine(line []byte) bool {
	s := strings.TrimSpace(string(line))
	if s == "" || s[0] == ';' || s[0] == '#' || s[0] == '[' {
		return false
	}
	key, _, _ := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if len(key) >= 2 && (key[0] == '"' && key[len(key)-1] == '"' || key[0] == '\'' && key[len(key)-1] == '\'') {
		key = key[1 : len(key)-1]
	}
	key = strings.ToLower(strings.TrimSuffix(key, "[]"))
	if i := strings.LastIndexByte(key, ':'); i >= 0 {
		key = key[i+1:]
	}
	key = strings.TrimSpace(key)
	for _, k := range npmrcSecretKeys {
		if key == k {
			return true
		}
	}
	return false
}
