package permission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// One question per command. An agent such as omp asks the user with
// session/request_permission before a tool call runs a command, then runs
// it through terminal/create, which acpterm would ask about again. A yes
// to the first covers the second, and only when the second runs exactly
// what the first showed:
//
//   - the tool call's rawInput names the command: "command" as an argv
//     (["ls","-l"]) or as a shell line ("ls -l"), and maybe "cwd". The
//     question then shows it, quoted word by word, and says that a yes
//     lets it run once.
//   - an argv matches a terminal/create whose command and args are that
//     argv, word for word, with args (so that no shell reads it);
//   - a line matches a terminal/create of that line with no args (the
//     client's shell runs it), or one that runs it with a shell named by
//     its absolute path: SHELL -c LINE, SHELL -lc LINE or SHELL -l -c
//     LINE (omp runs $SHELL -l -c LINE when $SHELL is a bash or a zsh,
//     else the first bash on its PATH). The shell is sh, bash, dash, zsh
//     or ksh in /bin, /usr/bin, /usr/local/bin or /opt/homebrew/bin, or
//     the user's own $SHELL, exactly;
//   - a line "cd DIR && REST", DIR an absolute path written plainly (or
//     in single quotes), also matches REST run that way in DIR: omp takes
//     such a cd off the line and runs the rest in the directory, which
//     does what the line does. A relative DIR does not (the question
//     cannot say which directory it is);
//   - the terminal/create sets no environment variables (they could
//     change what runs: PATH, LD_PRELOAD, BASH_ENV);
//   - its cwd is the rawInput's cwd, when it has one; without one the
//     question says "in any directory of the workspace" (terminal/create
//     is confined to the workspace roots either way);
//   - in the same session, within grantWindow of the yes, and once: the
//     grant is used up by the first terminal/create it matches.
//
// Anything else is asked about as before. A no, a cancelled question, or
// --deny-all gives no grant; "always" and --approve-all need none.

// grantWindow is how long after a yes its command may start unasked.
const grantWindow = 30 * time.Second

// maxGrants bounds the grants waiting for their terminal/create: an agent
// may ask any number of questions and never run the commands.
const maxGrants = 16

// maxGrantArgs bounds the words of a rawInput argv taken as a grant: a
// longer one is asked about again, whole.
const maxGrantArgs = 256

// grant is a command a yes allowed to run once without a second question.
type grant struct {
	sid   acp.SessionID
	argv  []string // the exact argv, or nil for a shell line
	line  string
	cwd   string // "" for any directory of the workspace
	until time.Time
	call  acp.ToolCallID
}

// grants are the approver's unused grants, oldest first.
type grants struct {
	mu   sync.Mutex
	list []grant
	now  func() time.Time // time.Now when nil
}

func (g *grants) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

// grantOf is the command a session/request_permission's tool call names
// in its rawInput, if it names one.
func grantOf(req *acp.RequestPermissionRequest) (grant, bool) {
	var in struct {
		Command json.RawMessage `json:"command"`
		Cwd     json.RawMessage `json:"cwd"`
	}
	if len(req.ToolCall.RawInput) == 0 || json.Unmarshal(req.ToolCall.RawInput, &in) != nil {
		return grant{}, false
	}
	g := grant{sid: req.SessionID, call: req.ToolCall.ToolCallID}
	if len(in.Cwd) > 0 {
		if json.Unmarshal(in.Cwd, &g.cwd) != nil || !filepath.IsAbs(g.cwd) {
			return grant{}, false // a cwd it cannot show exactly: no grant
		}
		g.cwd = filepath.Clean(g.cwd)
	}
	var line string
	if json.Unmarshal(in.Command, &line) == nil && line != "" {
		g.line = line
		return g, true
	}
	var argv []string
	if json.Unmarshal(in.Command, &argv) == nil && len(argv) > 0 && len(argv) <= maxGrantArgs && argv[0] != "" {
		g.argv = argv
		return g, true
	}
	return grant{}, false
}

// grantQuestion is what the permission question adds for a grant: the
// command exactly, and what a yes does with it.
func grantQuestion(g grant) string {
	cmd := textsafe.Quote(g.line)
	if g.argv != nil {
		cmd = textsafe.QuoteArgs(g.argv)
	}
	where := "in any directory of the workspace"
	if g.cwd != "" {
		where = "in " + textsafe.Quote(g.cwd)
	}
	return "  command: " + fitCommand(cmd) + "\n  (a yes also lets acpterm run exactly this command once, " + where + ", without asking again)\n"
}

// add keeps a grant, forgetting the oldest past maxGrants.
func (g *grants) add(gr grant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr.until = g.clock().Add(grantWindow)
	g.list = append(g.list, gr)
	if len(g.list) > maxGrants {
		g.list = slices.Delete(g.list, 0, len(g.list)-maxGrants)
	}
}

// take uses up the grant that info runs, if there is one, and returns it.
func (g *grants) take(info *terminal.Info) (grant, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock()
	g.list = slices.DeleteFunc(g.list, func(gr grant) bool { return now.After(gr.until) })
	for i, gr := range g.list {
		if gr.matches(info) {
			g.list = slices.Delete(g.list, i, i+1)
			return gr, true
		}
	}
	return grant{}, false
}

// shellNames and shellDirs make the shells a line grant may be run with:
// absolute paths, so that no PATH decides which program it is, in the
// directories systems and package managers install them in.
var (
	shellNames = []string{"sh", "bash", "dash", "zsh", "ksh"}
	shellDirs  = []string{"/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"}
)

// isLineShell reports whether a line grant may be run with the program
// path: a known shell in a system directory, or the user's own $SHELL
// (which the agent inherits, and omp runs lines with).
func isLineShell(path string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || !slices.Contains(shellNames, filepath.Base(path)) {
		return false
	}
	return slices.Contains(shellDirs, filepath.Dir(path)) || path == os.Getenv("SHELL")
}

// shellLine is the line info runs with a shell: its command when it has
// no args (the client's shell runs it), or LINE of SHELL -c LINE,
// SHELL -lc LINE or SHELL -l -c LINE.
func shellLine(info *terminal.Info) (string, bool) {
	if len(info.Args) == 0 {
		return info.Command, true
	}
	if !isLineShell(info.Command) {
		return "", false
	}
	n := len(info.Args)
	for _, flags := range [][]string{{"-c"}, {"-lc"}, {"-l", "-c"}} {
		if n == len(flags)+1 && slices.Equal(info.Args[:n-1], flags) {
			return info.Args[n-1], true
		}
	}
	return "", false
}

// matches reports whether info runs exactly the grant's command.
func (gr grant) matches(info *terminal.Info) bool {
	if gr.sid != info.SessionID || len(info.Env) > 0 {
		return false
	}
	cwd := filepath.Clean(info.Cwd)
	if gr.argv != nil {
		return (gr.cwd == "" || cwd == gr.cwd) && len(info.Args) > 0 && info.Command == gr.argv[0] && slices.Equal(info.Args, gr.argv[1:])
	}
	line, ok := shellLine(info)
	if !ok {
		return false
	}
	if line == gr.line && (gr.cwd == "" || cwd == gr.cwd) {
		return true
	}
	// omp's "cd DIR && REST", run as REST in DIR. Only without a cwd of
	// its own: with one, omp runs the line as it is.
	if gr.cwd == "" {
		if dir, rest, ok := cdPrefix(gr.line); ok {
			return line == rest && cwd == dir
		}
	}
	return false
}

// maxCdDir bounds the directory of a "cd DIR && REST" line.
const maxCdDir = 4096

// cdPrefix splits "cd DIR && REST" (spaces or tabs between the words, as
// omp reads it) when DIR is an absolute path, written with none of the
// characters a shell would expand or split at, or in single quotes with
// no quote or newline inside. It returns DIR cleaned, as the directory a
// command runs in is compared.
func cdPrefix(line string) (dir, rest string, ok bool) {
	s, found := strings.CutPrefix(line, "cd")
	if !found || s == "" || (s[0] != ' ' && s[0] != '\t') {
		return "", "", false
	}
	s = strings.TrimLeft(s, " \t")
	if q, found := strings.CutPrefix(s, "'"); found {
		end := strings.IndexByte(q, '\'')
		if end < 0 {
			return "", "", false
		}
		dir, s = q[:end], q[end+1:]
		if strings.ContainsAny(dir, "\n\r") {
			return "", "", false
		}
	} else {
		end := strings.IndexFunc(s, func(r rune) bool { return !isPlainPathRune(r) })
		if end < 0 {
			return "", "", false
		}
		dir, s = s[:end], s[end:]
	}
	if dir == "" || len(dir) > maxCdDir || !strings.HasPrefix(dir, "/") {
		return "", "", false
	}
	s = strings.TrimLeft(s, " \t")
	s, found = strings.CutPrefix(s, "&&")
	if !found {
		return "", "", false
	}
	rest = strings.TrimLeft(s, " \t")
	if rest == "" {
		return "", "", false
	}
	return filepath.Clean(dir), rest, true
}

// isPlainPathRune reports whether r may be in a path that no shell
// expands, splits or quotes: letters, digits and a few marks. Not ~ (the
// home directory), $, `, globs, quotes, backslashes, separators.
func isPlainPathRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("/._-+,@%:", r)
}
