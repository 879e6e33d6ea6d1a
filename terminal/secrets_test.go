package terminal_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/terminal"
)

func TestWithoutSecrets(t *testing.T) {
	env := []string{
		"PATH=/bin", "HOME=/home/u", "OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=ghp", "aws_secret_access_key=x",
		"PGPASSWORD=pw", "MY_PASSWD=pw", "LANG=C", "NPM_TOKEN=n", "broken",
	}
	kept, dropped := terminal.WithoutSecrets(env, "NPM_TOKEN")
	want := []string{"PATH=/bin", "HOME=/home/u", "LANG=C", "NPM_TOKEN=n", "broken"}
	if !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	wantDropped := []string{"GITHUB_TOKEN", "MY_PASSWD", "OPENAI_API_KEY", "PGPASSWORD", "aws_secret_access_key"}
	if !slices.Equal(dropped, wantDropped) {
		t.Errorf("dropped %q, want %q", dropped, wantDropped)
	}
}

// TestWithoutSecretsWider: the names and values that carry credentials
// although none of the first words (KEY, SECRET, TOKEN, PASSWORD) is in
// their names, and the names that look like them and carry none.
func TestWithoutSecretsWider(t *testing.T) {
	secret := []string{
		"GITHUB_PAT=github_pat_1", "GH_PAT=p", "PAT=p", "ANTHROPIC_AUTH=a", "NPM_AUTH=n", "DOCKER_AUTH_CONFIG={}",
		"GOOGLE_APPLICATION_CREDENTIALS=/home/u/sa.json", "AWS_SHARED_CREDENTIALS_FILE=/c", "SENTRY_DSN=https://k@o.ingest/1",
		"DATABASE_URL=postgres://app:hunter2@db:5432/app", "HTTPS_PROXY=http://me:pw@proxy:3128", "MY_PASSPHRASE=x",
		"SESSION_COOKIE=c", "REDIS=redis://:pw@cache:6379",
	}
	plain := []string{
		"PATH=/bin", "SSH_AUTH_SOCK=/run/user/1/ssh", "GOPATH=/go", "DATABASE_URL_RO=postgres://db:5432/app",
		"HOMEPAGE=https://example.com/@user", "GIT_REMOTE=git@github.com:o/r.git", "SPATIAL=1", "MAILTO=a@b",
	}
	kept, dropped := terminal.WithoutSecrets(append(slices.Clone(secret), plain...))
	if !slices.Equal(kept, plain) {
		t.Errorf("kept %q, want %q", kept, plain)
	}
	if len(dropped) != len(secret) {
		t.Errorf("dropped %d names %q, want the %d of %q", len(dropped), dropped, len(secret), secret)
	}
	// keep lets one through by name, whatever made it a credential.
	kept, _ = terminal.WithoutSecrets([]string{"DATABASE_URL=postgres://a:b@h/d"}, "DATABASE_URL")
	if len(kept) != 1 {
		t.Errorf("DATABASE_URL kept by name: got %q", kept)
	}
}

// FuzzIsSecretValue: no value makes IsSecretValue panic, a value it calls
// a credential has a login in an authority, and every URL built with a
// password is one.
func FuzzIsSecretValue(f *testing.F) {
	for _, s := range []string{"postgres://u:p@h/d", "https://h/@x", "a://@", "://u:p@", "x://u:p@h@i", "x://%zz:p@h", "git@h:r", ""} {
		f.Add(s, "u", "p")
	}
	f.Fuzz(func(t *testing.T, value, user, pass string) {
		if terminal.IsSecretValue(value) && (!strings.Contains(value, "://") || !strings.Contains(value, "@")) {
			t.Errorf("IsSecretValue(%q) without an authority holding a login", value)
		}
		u := url.URL{Scheme: "https", User: url.UserPassword(user, pass), Host: "example.com"}
		if !terminal.IsSecretValue(u.String()) {
			t.Errorf("IsSecretValue(%q) = false for a URL with a password", u.String())
		}
	})
}

// TestSecretsNotInCommands: a manager given WithoutSecrets' environment
// runs commands that do not see the credentials, and a request's own env
// still applies.
func TestSecretsNotInCommands(t *testing.T) {
	base, _ := terminal.WithoutSecrets([]string{"PATH=/usr/bin:/bin", "ANTHROPIC_API_KEY=sk-ant", "KEEP_ME=1"})
	m := terminal.NewManager(&terminal.Options{Env: base})
	defer m.Close()
	ctx := context.Background()
	info, err := m.Create(ctx, terminal.Request{SessionID: "s", Command: "env", Cwd: t.TempDir(), Env: []terminal.EnvVar{{Name: "REQ_TOKEN", Value: "asked"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, "s", info.TerminalID); err != nil {
		t.Fatal(err)
	}
	out, err := m.Output(ctx, "s", info.TerminalID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Text, "sk-ant") || !strings.Contains(out.Text, "KEEP_ME=1") || !strings.Contains(out.Text, "REQ_TOKEN=asked") {
		t.Errorf("the command's environment:\n%s", out.Text)
	}
}
