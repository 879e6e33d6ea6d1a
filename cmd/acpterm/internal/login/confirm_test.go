package login

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/exitcode"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
)

func TestEnvRefusal(t *testing.T) {
	for name, refused := range map[string]bool{
		"LD_PRELOAD": true, "ld_preload": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true,
		"DYLD_INSERT_LIBRARIES": true, "BASH_FUNC_ls%%": true, "BASH_ENV": true, "ENV": true,
		"ZDOTDIR": true, "PATH": true, "NODE_OPTIONS": true, "PERL5OPT": true, "PYTHONPATH": true,
		"PYTHONSTARTUP": true, "JAVA_TOOL_OPTIONS": true, "SHELLOPTS": true, "PS4": true,
		// Not refused: what logins set, and names that only start like
		// a refused one.
		"FAKE_LOGIN_MODE": false, "HOME": false, "ENVIRONMENT": false, "LD": false,
		"PATHS": false, "NODE_ENV": false, "OPENAI_API_KEY": false,
	} {
		if got := envRefusal(name) != ""; got != refused {
			t.Errorf("envRefusal(%q) refuses: %v, want %v", name, got, refused)
		}
	}
}

func TestLoginPlanCheckEnv(t *testing.T) {
	many := map[string]string{}
	for i := range maxLoginEnv + 1 {
		many[fmt.Sprintf("V%d", i)] = "x"
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		allowed []string
		code    int
		says    string
	}{
		{"none", nil, nil, exitcode.OK, ""},
		{"harmless", map[string]string{"MODE": "tui"}, nil, exitcode.OK, ""},
		{"refused", map[string]string{"MODE": "tui", "LD_PRELOAD": "/x.so"}, nil, exitcode.Usage,
			"the login command was not run: the agent sets LD_PRELOAD (LD_PRELOAD: the dynamic loader takes it (LD_PRELOAD loads code into every program)); pass --allow-env LD_PRELOAD to allow it"},
		{"allowed", map[string]string{"LD_PRELOAD": "/x.so"}, []string{"LD_PRELOAD"}, exitcode.OK, ""},
		// Allowing is by the exact name the agent sends.
		{"allowed in another case", map[string]string{"ld_preload": "/x.so"}, []string{"LD_PRELOAD"}, exitcode.Usage, "pass --allow-env ld_preload"},
		{"hostile name quoted", map[string]string{"LD_\x1b[2J": "x"}, nil, exitcode.Usage, `the agent sets $'LD_\x1b[2J'`},
		{"invalid name", map[string]string{"A=B": "x"}, nil, exitcode.Agent, "a variable whose name is not valid: A=B"},
		{"too many", many, nil, exitcode.Agent, fmt.Sprintf("sets %d environment variables; acpterm accepts at most %d", maxLoginEnv+1, maxLoginEnv)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &loginPlan{argv: []string{"agent"}, cwd: "/w", env: tt.env}
			code, msg := p.checkEnv(tt.allowed)
			if code != tt.code || !strings.Contains(msg, tt.says) {
				t.Fatalf("checkEnv = %d, %q; want %d, %q", code, msg, tt.code, tt.says)
			}
		})
	}
}

// The question shows the command and each variable quoted, sorted, with
// the refused ones marked, and nothing of the agent's raw.
func TestLoginPlanDescribe(t *testing.T) {
	p := &loginPlan{
		argv:  []string{"/bin/sh", "-c", "echo hi\r\x1b[1Aacpterm: logged in"},
		named: true,
		cwd:   "/w s",
		env:   map[string]string{"MODE": "a b", "BASH_ENV": "/tmp/rc", "\u202eX": "y"},
	}
	got := p.describe()
	want := `  /bin/sh -c $'echo hi\r\x1b[1Aacpterm: logged in'
  (a program the agent names, not the agent's own command line)
  in '/w s'
  with BASH_ENV=/tmp/rc  (refused unless --allow-env BASH_ENV)
  with 'MODE=a b'
  with $'\u202eX=y'`
	if got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}

// FuzzLoginPlanDescribe: whatever the agent's command and variables, the
// question holds no raw control, C1 or bidi character (only its own
// newlines) and stays bounded.
func FuzzLoginPlanDescribe(f *testing.F) {
	f.Add("/bin/sh", "-c\x00echo\r\x1b]0;x\a", "LD_PRELOAD", "/x.so", "BASH_FUNC_ls%%", "() { :; }")
	f.Add("agent", "--login", "MODE", "tui", "\u202e", "\x9b2J")
	f.Fuzz(func(t *testing.T, cmd, args, k1, v1, k2, v2 string) {
		p := &loginPlan{argv: append([]string{cmd}, strings.Split(args, "\x00")...), named: len(cmd)%2 == 0,
			cwd: v2, env: map[string]string{k1: v1, k2: v2}}
		got := p.describe()
		for i, r := range got {
			if r == utf8.RuneError && !strings.HasPrefix(got[i:], "\uFFFD") {
				t.Fatalf("invalid UTF-8 at %d in %q", i, got)
			}
			if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
				t.Fatalf("raw %U at %d in %q", r, i, got)
			}
		}
		// At most 4 KiB, or its two ends and the note between them.
		if len(got) > render.MaxFitCommand+256 {
			t.Fatalf("%d bytes shown", len(got))
		}
		_, _ = p.checkEnv(nil) // must not panic
	})
}
