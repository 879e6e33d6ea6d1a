package terminal_test

import (
	"context"
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
