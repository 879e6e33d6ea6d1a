package permission

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// Approval says who answers permission questions: the agent's
// session/request_permission and the terminal runtime's decision on each
// terminal/create.
type Approval int

const (
	// ApprovalAsk asks on the TTY, one key for an answer (y, n or a; see
	// Prompter); without one, it denies and says so on stderr.
	ApprovalAsk Approval = iota
	// ApprovalAll allows everything (--approve-all).
	ApprovalAll
	// ApprovalNone denies everything (--deny-all).
	ApprovalNone
)

// answer is the decision on one question.
type answer int

const (
	answerNo answer = iota
	answerYes
	answerAlways // yes, and to every later question of this run
	answerCancelled
)

// chooseOption picks the option of a session/request_permission that
// carries an answer: the matching kind, or the other one of the same sense
// (allow_always for yes when there is no allow_once, …). ok is false when
// the agent offered no option of that sense; the answer is then cancelled.
func chooseOption(opts []acp.PermissionOption, a answer) (acp.PermissionOption, bool) {
	var prefs []acp.PermissionOptionKind
	switch a {
	case answerYes:
		prefs = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways}
	case answerAlways:
		prefs = []acp.PermissionOptionKind{acp.PermissionOptionKindAllowAlways, acp.PermissionOptionKindAllowOnce}
	case answerNo:
		prefs = []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways}
	}
	for _, k := range prefs {
		for _, o := range opts {
			if o.Kind == k {
				return o, true
			}
		}
	}
	return acp.PermissionOption{}, false
}

// Approver answers permission questions according to an Approval, asking
// through a Prompter when it has one. After CancelAll every pending and
// later question is answered "cancelled".
type Approver struct {
	mode   Approval
	prompt *Prompter // nil: nobody to ask
	report func(render.PermissionEvent)
	warn   func(line string) // one line to stderr

	mu        sync.Mutex
	always    bool
	cancelled bool
	cancel    chan struct{}

	// granted are the commands a yes to the agent's own question lets run
	// once without a second one (grant.go).
	granted grants
}

// New returns the Approver of a run: mode says who answers, p asks on the
// terminal (nil when there is none), report is given every decision, and
// warn one line for stderr when a question is denied for want of p.
func New(mode Approval, p *Prompter, report func(render.PermissionEvent), warn func(string)) *Approver {
	return &Approver{mode: mode, prompt: p, report: report, warn: warn, cancel: make(chan struct{})}
}

// CancelAll answers every pending question "cancelled", and every later one.
func (a *Approver) CancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.cancelled {
		a.cancelled = true
		close(a.cancel)
	}
}

// Done is closed by CancelAll.
func (a *Approver) Done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cancel
}

// Reset ends the effect of CancelAll: in an interactive session, the
// questions of the next turn are asked again.
func (a *Approver) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancelled {
		a.cancelled = false
		a.cancel = make(chan struct{})
	}
}

// basis is why a question got its answer.
type basis uint8

const (
	basisAsked      basis = iota // the user answered
	basisCancelled               // the turn was cancelled
	basisApproveAll              // --approve-all
	basisDenyAll                 // --deny-all
	basisAlways                  // the user answered "always" earlier
	basisNoTTY                   // nobody to ask
)

// String is the reason shown beside a decision nobody typed; "" for an
// answer the user gave.
func (b basis) String() string {
	switch b {
	case basisCancelled:
		return "turn cancelled"
	case basisApproveAll:
		return "--approve-all"
	case basisDenyAll:
		return "--deny-all"
	case basisAlways:
		return "always allowed earlier in this run"
	case basisNoTTY:
		return "no TTY to ask on"
	}
	return ""
}

// decide answers one question. what names the request in the stderr
// message given when it is denied for want of a TTY.
func (a *Approver) decide(ctx context.Context, question, what string) (answer, basis) {
	a.mu.Lock()
	cancelled, always := a.cancelled, a.always
	a.mu.Unlock()
	switch {
	case cancelled:
		return answerCancelled, basisCancelled
	case a.mode == ApprovalAll:
		return answerYes, basisApproveAll
	case a.mode == ApprovalNone:
		return answerNo, basisDenyAll
	case always:
		return answerAlways, basisAlways
	case a.prompt == nil:
		a.warn(fmt.Sprintf("acpterm: denied %s: no TTY to ask on (use --approve-all to allow, --deny-all to silence this)", what))
		return answerNo, basisNoTTY
	}
	ans := a.prompt.ask(ctx, a.Done(), question)
	if ans == answerAlways {
		a.mu.Lock()
		a.always = true
		a.mu.Unlock()
	}
	return ans, basisAsked
}

// RequestPermission answers session/request_permission. Everything the
// question quotes is the agent's and goes through textsafe.
func (a *Approver) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	title := string(req.ToolCall.ToolCallID)
	if req.ToolCall.Title != nil && *req.ToolCall.Title != "" {
		title = *req.ToolCall.Title
	}
	safeTitle := render.Clip(textsafe.Line(title), maxPromptTitle)
	q := permissionQuestion(safeTitle, req)
	g, hasGrant := grantOf(req)
	if hasGrant {
		// The question shows the command a yes lets run: before its
		// allow? line.
		i := strings.LastIndex(q, "  allow? ")
		q = q[:i] + grantQuestion(g) + q[i:]
	}
	ans, why := a.decide(ctx, q, fmt.Sprintf("the agent's request for permission (%s)", safeTitle))
	ev := render.PermissionEvent{SessionID: req.SessionID, ToolCallID: req.ToolCall.ToolCallID, Title: title, Reason: why.String()}
	resp := &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}
	ev.Decision = "cancelled"
	if ans != answerCancelled {
		if opt, ok := chooseOption(req.Options, ans); ok {
			resp.Outcome = &acp.SelectedPermissionOutcome{OptionID: opt.OptionID}
			ev.Decision, ev.OptionID = string(opt.Kind), opt.OptionID
			if hasGrant && why == basisAsked && ans == answerYes {
				a.granted.add(g)
			}
		} else {
			ev.Reason = "the agent offered no matching option"
		}
	}
	a.report(ev)
	return resp, nil
}

// DecideTerminal is the terminal runtime's Policy.Decide: whether the
// agent may run this command. The question shows what will run, exactly
// (promptCommand), not the agent's description of it.
func (a *Approver) DecideTerminal(ctx context.Context, info terminal.Info) terminal.Decision {
	cmd := textsafe.CommandLine(info.Command, info.Args) // as the renderers show it
	a.mu.Lock()
	cancelled := a.cancelled
	a.mu.Unlock()
	if !cancelled {
		if g, ok := a.granted.take(&info); ok {
			a.report(render.PermissionEvent{SessionID: acp.SessionID(info.SessionID), ToolCallID: g.call, Title: cmd, TerminalCommand: cmd,
				Decision: string(acp.PermissionOptionKindAllowOnce), Reason: "allowed with the agent's question for this command"})
			return terminal.Allow()
		}
	}
	q := "acpterm: the agent wants to run: " + promptCommand(&info) +
		"\n  allow? [y]es, [n]o, [a]lways (everything, for the rest of this run): "
	ans, why := a.decide(ctx, q, fmt.Sprintf("the command %q", render.Clip(cmd, maxPromptTitle)))
	ev := render.PermissionEvent{SessionID: acp.SessionID(info.SessionID), Title: cmd, TerminalCommand: cmd, Reason: why.String()}
	var d terminal.Decision
	switch ans {
	case answerYes:
		ev.Decision, d = string(acp.PermissionOptionKindAllowOnce), terminal.Allow()
	case answerAlways:
		ev.Decision, d = string(acp.PermissionOptionKindAllowAlways), terminal.Allow()
	case answerCancelled:
		ev.Decision, d = "cancelled", terminal.Deny("the turn was cancelled")
	default:
		ev.Decision = string(acp.PermissionOptionKindRejectOnce)
		switch why {
		case basisAsked:
			d = terminal.Deny("the user refused")
		case basisNoTTY:
			d = terminal.Deny("acpterm had no TTY to ask the user on (it runs with --approve-all to allow commands)")
		default:
			d = terminal.Deny("refused by " + why.String())
		}
	}
	a.report(ev)
	return d
}

// Bounds of what a permission question shows of the agent's request. The
// question must fit on the screen with its title: an agent that sent
// thousands of options, or a title of megabytes, would otherwise scroll
// what it asks about out of sight, leaving the user a bare "allow?".
const (
	maxPromptTitle   = 1 << 10 // bytes of the title
	maxPromptOptions = 8       // options listed
	maxOptionName    = 256     // bytes of an option's name or kind
)

// permissionQuestion is the question asked for a session/request_permission
// about title (already made safe).
func permissionQuestion(title string, req *acp.RequestPermissionRequest) string {
	kind := ""
	if req.ToolCall.Kind != nil && *req.ToolCall.Kind != "" {
		kind = " (" + render.Clip(textsafe.Line(string(*req.ToolCall.Kind)), maxOptionName) + ")"
	}
	return fmt.Sprintf("acpterm: the agent asks permission for: %s%s\n%s  allow? [y]es, [n]o, [a]lways (everything, for the rest of this run): ", title, kind, optionsLine(req.Options))
}

// optionsLine lists the options of a session/request_permission for the
// question, as "  options: Allow (allow_once), …\n", the first
// maxPromptOptions of them. The answer picks an option by its kind
// (chooseOption), never by its name, so an option named "Deny" of kind
// allow_once is shown as what it is.
func optionsLine(opts []acp.PermissionOption) string {
	if len(opts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  options:")
	for i, o := range opts {
		if i == maxPromptOptions {
			fmt.Fprintf(&b, ", and %d more", len(opts)-i)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		name := o.Name
		if name == "" {
			name = string(o.OptionID)
		}
		b.WriteString(" " + render.Clip(textsafe.Line(name), maxOptionName) + " (" + render.Clip(textsafe.Line(string(o.Kind)), maxOptionName) + ")")
	}
	b.WriteString("\n")
	return b.String()
}

// promptCommand is a terminal/create as its permission question shows it:
// the argv that will run, every word quoted by textsafe.Quote so that
// spaces, quotes, newlines and control characters are unambiguous — a
// shell line as the shell invocation that runs it (/bin/sh -c 'LINE') —
// then, on their own lines, the executable an argv's command resolved to
// (PATH, maybe the request's own, decides it), the directory and the
// environment variables the request sets. One too long to read on a
// screen is shown by its two ends, and says how much is not shown
// (fitCommand).
func promptCommand(info *terminal.Info) string {
	return fitCommand(fullCommand(info))
}

// fitCommand is cmd, or its two ends and what is left out between them,
// so that a question fits on a screen (render.FitCommand).
func fitCommand(cmd string) string { return render.FitCommand(cmd) }

// fullCommand is promptCommand's text, whatever its length.
func fullCommand(info *terminal.Info) string {
	words := info.Argv
	if !info.Shell || len(words) == 0 {
		words = append([]string{info.Command}, info.Args...)
	}
	var b strings.Builder
	b.WriteString(textsafe.QuoteArgs(words))
	if !info.Shell && len(info.Argv) > 0 && info.Argv[0] != info.Command {
		b.WriteString("\n  program: " + textsafe.Quote(info.Argv[0]))
	}
	if info.Cwd != "" {
		b.WriteString("\n  in " + textsafe.Quote(info.Cwd))
		if info.Where != "" {
			b.WriteString(" on " + textsafe.Line(info.Where))
		}
	}
	if len(info.Env) > 0 {
		b.WriteString("\n  env:")
		for _, e := range info.Env {
			b.WriteString(" " + textsafe.Quote(e.Name) + "=" + textsafe.Quote(e.Value))
		}
	}
	return b.String()
}
