package login

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/exitcode"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// This file decides whether acpterm login runs the terminal login an agent
// asks for. The command and its environment are the agent's to write: the
// legacy _meta["terminal-auth"] form names any program (/bin/sh -c …), and
// the variables are set on a program that runs unconfined, with the
// user's terminal. So the user sees all of it, exactly, and says yes first;
// and variables that make a program run code nobody asked for are refused
// unless the user names them.

// maxLoginEnv bounds the variables a terminal login may set: a login sets
// a mode or two, and a question must fit on a screen.
const maxLoginEnv = 32

// refusedEnv are the variables a login may not set unless the user allows
// each by name (--allow-env), with the reason. Each makes the login
// command, or a program it starts, load or run code from a path or text
// of the agent's choice before (or instead of) doing what it was asked:
// the dynamic loader's (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT and the rest
// of LD_*; DYLD_* on macOS), a shell's startup files and imported
// functions, an interpreter's startup modules and options. PATH decides
// which program each command the login starts runs. A variable not listed
// is shown, and the user's yes covers it.
var refusedEnv = map[string]string{
	"BASH_ENV":          "bash runs the file it names at start",
	"ENV":               "sh runs the file it names at start",
	"ZDOTDIR":           "zsh reads its startup files from it",
	"SHELLOPTS":         "it sets bash's options (xtrace runs PS4)",
	"BASHOPTS":          "it sets bash's options",
	"PS4":               "bash expands it, running what it holds, when tracing",
	"PROMPT_COMMAND":    "bash runs it before each prompt",
	"PATH":              "it decides which program every command runs",
	"GCONV_PATH":        "glibc loads character-set modules from it",
	"PYTHONPATH":        "Python imports modules from it first",
	"PYTHONHOME":        "Python loads its standard library from it",
	"PYTHONSTARTUP":     "Python runs the file it names",
	"NODE_OPTIONS":      "Node.js takes options from it (--require loads code)",
	"NODE_PATH":         "Node.js loads modules from it",
	"PERL5OPT":          "Perl takes options from it (-M loads code)",
	"PERL5LIB":          "Perl loads modules from it first",
	"PERLLIB":           "Perl loads modules from it first",
	"RUBYOPT":           "Ruby takes options from it (-r loads code)",
	"RUBYLIB":           "Ruby loads libraries from it first",
	"JAVA_TOOL_OPTIONS": "the JVM takes options from it (-javaagent loads code)",
	"_JAVA_OPTIONS":     "the JVM takes options from it (-javaagent loads code)",
	"JDK_JAVA_OPTIONS":  "the java launcher takes options from it",
}

// refusedEnvPrefixes are the families of refusedEnv.
var refusedEnvPrefixes = map[string]string{
	"LD_":        "the dynamic loader takes it (LD_PRELOAD loads code into every program)",
	"DYLD_":      "the macOS dynamic loader takes it",
	"BASH_FUNC_": "bash imports it as a function, which can replace any command",
}

// envRefusal says why a login may not set name ("" when it may). Names
// are compared in upper case: Windows reads them so.
func envRefusal(name string) string {
	up := strings.ToUpper(name)
	if why, ok := refusedEnv[up]; ok {
		return why
	}
	for p, why := range refusedEnvPrefixes {
		if strings.HasPrefix(up, p) {
			return why
		}
	}
	return ""
}

// validEnvName reports whether name can be set: not empty, no '=' nor NUL.
func validEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}

// loginPlan is what a terminal login would run.
type loginPlan struct {
	argv []string
	// named: the agent named the program (the legacy form), rather than
	// adding arguments to its own command line.
	named bool
	cwd   string
	env   map[string]string
}

// envNames are the plan's variable names, sorted.
func (p *loginPlan) envNames() []string {
	names := make([]string, 0, len(p.env))
	for k := range p.env {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// describe is the plan as the question shows it, every word the agent's
// and so quoted: the command line, where it runs and each variable it
// sets. One too long for a screen shows its two ends (render.FitCommand).
func (p *loginPlan) describe() string {
	var b strings.Builder
	b.WriteString("  " + textsafe.QuoteArgs(p.argv) + "\n")
	if p.named {
		b.WriteString("  (a program the agent names, not the agent's own command line)\n")
	}
	b.WriteString("  in " + textsafe.Quote(p.cwd) + "\n")
	for _, k := range p.envNames() {
		b.WriteString("  with " + textsafe.Quote(k+"="+p.env[k]))
		if envRefusal(k) != "" {
			b.WriteString("  (refused unless --allow-env " + textsafe.Quote(k) + ")")
		}
		b.WriteString("\n")
	}
	return render.FitCommand(strings.TrimSuffix(b.String(), "\n"))
}

// checkEnv refuses a plan whose variables are too many, badly named, or
// of those envRefusal names and the user did not allow. The message says
// how to allow them.
func (p *loginPlan) checkEnv(allowed []string) (int, string) {
	if len(p.env) > maxLoginEnv {
		return exitcode.Agent, fmt.Sprintf("the agent's login sets %d environment variables; acpterm accepts at most %d", len(p.env), maxLoginEnv)
	}
	var refused, why []string
	for _, k := range p.envNames() {
		if !validEnvName(k) {
			return exitcode.Agent, "the agent's login sets a variable whose name is not valid: " + textsafe.Quote(k)
		}
		if w := envRefusal(k); w != "" && !slices.Contains(allowed, k) {
			refused = append(refused, textsafe.Quote(k))
			why = append(why, textsafe.Quote(k)+": "+w)
		}
	}
	if len(refused) == 0 {
		return exitcode.OK, ""
	}
	flags := "--allow-env " + strings.Join(refused, " --allow-env ")
	return exitcode.Usage, fmt.Sprintf("the login command was not run: the agent sets %s (%s); pass %s to allow it",
		strings.Join(refused, ", "), strings.Join(why, "; "), flags)
}

// confirm shows the plan and decides: exitcode.OK to run it. It refuses what
// checkEnv refuses; then, with --yes, it runs; on a terminal it asks, and
// only "y" or "yes" runs it; without a terminal it does not run.
func (l *login) confirm(ctx context.Context, p *loginPlan) (int, string) {
	c := &l.cfg
	l.say("acpterm: the agent's login command:\n" + p.describe())
	if code, msg := p.checkEnv(c.AllowEnv); code != exitcode.OK {
		return code, msg
	}
	if c.Yes {
		return exitcode.OK, ""
	}
	if c.TTYIn == nil || c.TTYOut == nil {
		return exitcode.Usage, "the login command was not run: there is no terminal to ask on; pass --yes to run it"
	}
	r := startLineReader(c.TTYIn)
	defer r.stop()
	fmt.Fprint(c.TTYOut, "Run it? [y/N] ")
	line, ok := r.next(ctx)
	if !ok {
		fmt.Fprintln(c.TTYOut)
		if ctx.Err() != nil {
			return exitcode.Cancelled, "interrupted"
		}
		return exitcode.Usage, "the login command was not run: no answer"
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return exitcode.OK, ""
	}
	return exitcode.Usage, "the login command was not run: declined"
}
