package main

import (
	"strings"
	"testing"
)

// TestSecretsWithheld: the commands acpterm runs for terminal/create do
// not get the variables named like credentials, unless --pass-env names
// them; the run says what it withheld.
func TestSecretsWithheld(t *testing.T) {
	t.Parallel()
	env := []string{"OPENAI_API_KEY=sk-e2e-secret", "DEPLOY_TOKEN=tok-e2e-secret", "ACPTERM_E2E_PLAIN=plain-value"}
	prompt := `echo "key=$OPENAI_API_KEY token=$DEPLOY_TOKEN plain=$ACPTERM_E2E_PLAIN"`
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"default", nil, "key= token= plain=plain-value"},
		{"pass-env", []string{"--pass-env", "DEPLOY_TOKEN"}, "key= token=tok-e2e-secret plain=plain-value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"run", "--approve-all", "--sandbox-agent"}, tt.flags...), "-p", prompt, "--", plainAcpterm(t), "agent")
			r := acpterm(t, opts{plain: true, env: env}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "stdout", r.stdout, tt.want)
			if strings.Contains(r.stdout, "sk-e2e-secret") {
				t.Errorf("the API key reached a command:\n%s", r.stdout)
			}
			mustContain(t, "stderr", r.stderr, "withheld from commands: ", "OPENAI_API_KEY", "--pass-env NAME")
		})
	}
	r := acpterm(t, opts{plain: true}, "run", "--pass-env", "A=B", "-p", "true", "--", plainAcpterm(t), "agent")
	if r.code != 2 || !strings.Contains(r.stderr, "--pass-env wants a variable name") {
		t.Errorf("--pass-env A=B: exit %d, stderr %q", r.code, r.stderr)
	}
}
