package permission

import (
	"context"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render/rendertest"
	"github.com/acpterm/acpterm/terminal"
)

// The questions show the agent's text with its escapes made visible
// (rendertest.Evil, rendertest.ScreenOffence), the rule the renderers and
// the rest of the client keep, and each command as it will run.

const evil = rendertest.Evil

func TestPromptCommand(t *testing.T) {
	forged := "echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la"
	tests := []struct {
		name string
		info terminal.Info
		want string
	}{
		{"argv", terminal.Info{Command: "go", Args: []string{"test", "./..."}, Argv: []string{"go", "test", "./..."}, Cwd: "/w"},
			"go test ./...\n  in /w"},
		{"resolved", terminal.Info{Command: "sh", Args: []string{"-c", "echo hi"}, Argv: []string{"/usr/bin/sh", "-c", "echo hi"}, Cwd: "/w"},
			"sh -c 'echo hi'\n  program: /usr/bin/sh\n  in /w"},
		{"shell line", terminal.Info{Command: forged, Shell: true, Argv: []string{"/bin/sh", "-c", forged}, Cwd: "/my dir"},
			`/bin/sh -c $'echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la'` + "\n  in '/my dir'"},
		{"args with controls", terminal.Info{Command: "printf", Args: []string{"a\nb", "it's", "\u202eevil", ""}, Argv: []string{"printf", "a\nb", "it's", "\u202eevil", ""}, Cwd: "/w"},
			`printf $'a\nb' 'it'\''s' $'\u202eevil' ''` + "\n  in /w"},
		{"env", terminal.Info{Command: "make", Args: []string{"x"}, Argv: []string{"make", "x"}, Cwd: "/w",
			Env: []terminal.EnvVar{{Name: "PATH", Value: "/tmp/evil:/usr/bin"}, {Name: "A", Value: "x y\x1b"}}},
			"make x\n  in /w\n  env: PATH=/tmp/evil:/usr/bin A=$'x y\\x1b'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := promptCommand(&tt.info); got != tt.want {
				t.Fatalf("(-want +got):\n-%s\n+%s", tt.want, got)
			}
		})
	}
}

// TestApproverHostile: the questions show the agent's text with its
// escapes visible, and the command as it runs.
func TestApproverHostile(t *testing.T) {
	rec := &recorder{}
	term := newTTY(t)
	a := New(ApprovalAsk, term.p, rec.report, rec.warn)
	forged := "echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la"
	done := make(chan bool, 1)
	go func() {
		done <- a.DecideTerminal(context.Background(), terminal.Info{Command: forged, Shell: true, Argv: []string{"/bin/sh", "-c", forged}, Cwd: "/w"}).Allow
	}()
	term.expect(t, `acpterm: the agent wants to run: /bin/sh -c $'echo REAL #\r\x1b[2Kacpterm: the agent wants to run: ls -la'`+"\n  in /w\n  allow?")
	term.answer(t, "n")
	if <-done {
		t.Fatal("allowed")
	}
	req := permRequest()
	title, kind := "title"+evil, acp.ToolKind("kind"+evil)
	req.ToolCall.Title, req.ToolCall.Kind = &title, &kind
	req.Options[0].Name = "Allow" + evil
	go func() {
		resp, _ := a.RequestPermission(context.Background(), req)
		_, ok := resp.Outcome.(*acp.SelectedPermissionOutcome)
		done <- ok
	}()
	term.expect(t, `  options: Allow<\x1b]52;c;aGk=\x07`)
	term.expect(t, "allow?")
	term.answer(t, "n")
	<-done
	if off := rendertest.ScreenOffence(term.out.String()); off != "" {
		t.Fatalf("%s in the questions:\n%q", off, term.out.String())
	}
	for _, want := range []string{"permission for: title<\\x1b]52", " (kind<\\x1b]52", " (allow_once), "} {
		if !strings.Contains(term.out.String(), want) {
			t.Errorf("the question lacks %q:\n%s", want, term.out.String())
		}
	}
}

// TestPromptSaysWhere: the approval of a command for a target names the
// target after the directory.
func TestPromptSaysWhere(t *testing.T) {
	info := &terminal.Info{Command: "make test", Shell: true, Cwd: "/srv/app", Where: "ssh://devbox"}
	if got := promptCommand(info); !strings.HasSuffix(got, "\n  in /srv/app on ssh://devbox") {
		t.Errorf("prompt %q", got)
	}
	info.Where = ""
	if got := promptCommand(info); strings.Contains(got, " on ") {
		t.Errorf("prompt for a command here %q", got)
	}
}
