package client

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

// Approval says who answers permission questions: the agent's
// session/request_permission and the terminal runtime's decision on each
// terminal/create.
type Approval int

const (
	// ApprovalAsk asks on the TTY, one key for an answer (y, n or a; see
	// prompter); without one, it denies and says so on stderr.
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

// approver answers permission questions according to an Approval, asking
// through a prompter when it has one. After CancelAll every pending and
// later question is answered "cancelled".
type approver struct {
	mode   Approval
	prompt *prompter // nil: nobody to ask
	report func(PermissionEvent)
	warn   func(line string) // one line to stderr

	mu        sync.Mutex
	always    bool
	cancelled bool
	cancel    chan struct{}
}

func newApprover(mode Approval, p *prompter, report func(PermissionEvent), warn func(string)) *approver {
	return &approver{mode: mode, prompt: p, report: report, warn: warn, cancel: make(chan struct{})}
}

// CancelAll answers every pending question "cancelled", and every later one.
func (a *approver) CancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.cancelled {
		a.cancelled = true
		close(a.cancel)
	}
}

// done is closed by CancelAll.
func (a *approver) done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cancel
}

// reset ends the effect of CancelAll: in an interactive session, the
// questions of the next turn are asked again.
func (a *approver) reset() {
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
func (a *approver) decide(ctx context.Context, question, what string) (answer, basis) {
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
	ans := a.prompt.ask(ctx, a.done(), question)
	if ans == answerAlways {
		a.mu.Lock()
		a.always = true
		a.mu.Unlock()
	}
	return ans, basisAsked
}

// RequestPermission answers session/request_permission. Everything the
// question quotes is the agent's and goes through textsafe.
func (a *approver) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	title := string(req.ToolCall.ToolCallID)
	if req.ToolCall.Title != nil && *req.ToolCall.Title != "" {
		title = *req.ToolCall.Title
	}
	kind := ""
	if req.ToolCall.Kind != nil && *req.ToolCall.Kind != "" {
		kind = " (" + textsafe.Line(string(*req.ToolCall.Kind)) + ")"
	}
	safeTitle := textsafe.Line(title)
	q := fmt.Sprintf("acpterm: the agent asks permission for: %s%s\n%s  allow? [y]es, [n]o, [a]lways (everything, for the rest of this run): ", safeTitle, kind, optionsLine(req.Options))
	ans, why := a.decide(ctx, q, fmt.Sprintf("the agent's request for permission (%s)", safeTitle))
	ev := PermissionEvent{SessionID: req.SessionID, ToolCallID: req.ToolCall.ToolCallID, Title: title, Reason: why.String()}
	resp := &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}
	ev.Decision = "cancelled"
	if ans != answerCancelled {
		if opt, ok := chooseOption(req.Options, ans); ok {
			resp.Outcome = &acp.SelectedPermissionOutcome{OptionID: opt.OptionID}
			ev.Decision, ev.OptionID = string(opt.Kind), opt.OptionID
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
func (a *approver) DecideTerminal(ctx context.Context, info terminal.Info) terminal.Decision {
	cmd := commandLine(&info)
	q := "acpterm: the agent wants to run: " + promptCommand(&info) +
		"\n  allow? [y]es, [n]o, [a]lways (everything, for the rest of this run): "
	ans, why := a.decide(ctx, q, fmt.Sprintf("the command %q", cmd))
	ev := PermissionEvent{SessionID: acp.SessionID(info.SessionID), Title: cmd, TerminalCommand: cmd, Reason: why.String()}
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

// optionsLine lists the options of a session/request_permission for the
// question, as "  options: Allow (allow_once), …\n". The answer picks an
// option by its kind (chooseOption), never by its name, so an option named
// "Deny" of kind allow_once is shown as what it is.
func optionsLine(opts []acp.PermissionOption) string {
	if len(opts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  options:")
	for i, o := range opts {
		if i > 0 {
			b.WriteString(",")
		}
		name := textsafe.Line(o.Name)
		if name == "" {
			name = textsafe.Line(string(o.OptionID))
		}
		b.WriteString(" " + name + " (" + textsafe.Line(string(o.Kind)) + ")")
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
// environment variables the request sets.
func promptCommand(info *terminal.Info) string {
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
	}
	if len(info.Env) > 0 {
		b.WriteString("\n  env:")
		for _, e := range info.Env {
			b.WriteString(" " + textsafe.Quote(e.Name) + "=" + textsafe.Quote(e.Value))
		}
	}
	return b.String()
}

// prompter asks questions on a terminal and takes one key for an answer:
// y (yes), n (no) or a (always), echoed as the word it stands for. Enter,
// space and tab are ignored; any other key is answered with a reminder of
// the three. One question is asked at a time; others wait their turn.
//
// When in is a terminal, it is in raw mode from just before a question is
// written until its key, so that the key counts without Enter and is not
// echoed; the saved mode is restored before the answer is echoed, on every
// way out (answer, cancel, end of input). Raw mode turns Ctrl-C into a byte instead of
// SIGINT: the prompter answers "no" to the question, after calling
// interrupt, which the driver sets to its own handling of Ctrl-C (cancel
// the turn; a second one kills the agent), so the cancel is under way
// before the agent hears "no". Ctrl-D, which
// raw mode also delivers as a byte, answers "no" as end of input does.
//
// When in is not a terminal (a pipe, a test), keys are read as they come:
// a line-buffered input delivers them after Enter.
type prompter struct {
	in      io.Reader
	out     io.Writer
	suspend func() func() // clears the renderer's live region meanwhile
	// raw puts the terminal in raw mode and returns the function that
	// restores it; nil when in is not a terminal.
	raw func() (restore func(), err error)
	// interrupt is what Ctrl-C typed in raw mode does besides answering no.
	interrupt func()

	sem       chan struct{}
	startOnce sync.Once
	keys      chan []byte // what each read returned
	stop      chan struct{}
	done      chan struct{} // the reader ended; nil if never started
}

// Keys the prompter acts on besides y, n and a. In raw mode the terminal
// delivers Ctrl-C and Ctrl-D as these bytes, and Enter as a CR.
const (
	keyCtrlC = 0x03
	keyCtrlD = 0x04
)

// newPrompter asks on out and reads answers from in. Close closes in when
// it is an io.Closer and waits for the reader; a reader that cannot be
// closed (a blocking stdin) is left to end with the process.
func newPrompter(in io.Reader, out io.Writer, suspend func() func()) *prompter {
	if suspend == nil {
		suspend = func() func() { return func() {} }
	}
	return &prompter{
		in: in, out: out, suspend: suspend, raw: rawMode(in), interrupt: interruptSelf,
		sem: make(chan struct{}, 1), stop: make(chan struct{}),
	}
}

// rawMode returns the function that puts in in raw mode, or nil when in is
// not a terminal. It reaches the descriptor through SyscallConn rather than
// Fd, which would switch the file to blocking mode, after which closing it
// no longer ends a pending read (see Close).
func rawMode(in io.Reader) func() (func(), error) {
	sc, ok := in.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	isTTY := false
	if rc.Control(func(fd uintptr) { isTTY = term.IsTerminal(int(fd)) }) != nil || !isTTY {
		return nil
	}
	return func() (func(), error) {
		var st *term.State
		var err error
		if cerr := rc.Control(func(fd uintptr) { st, err = term.MakeRaw(int(fd)) }); cerr != nil {
			return nil, cerr
		}
		if err != nil {
			return nil, err
		}
		var once sync.Once
		return func() {
			once.Do(func() { _ = rc.Control(func(fd uintptr) { _ = term.Restore(int(fd), st) }) })
		}, nil
	}
}

// interruptSelf sends this process the SIGINT that Ctrl-C would have sent
// outside raw mode. Where a process cannot signal itself (Windows), it
// does nothing; acpterm asks on no terminal there.
func interruptSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(os.Interrupt)
	}
}

func (p *prompter) start() {
	p.startOnce.Do(func() {
		p.keys = make(chan []byte)
		p.done = make(chan struct{})
		go p.read()
	})
}

func (p *prompter) read() {
	defer close(p.done)
	defer close(p.keys)
	for {
		// A fresh buffer each time: the one sent is the asker's.
		buf := make([]byte, 64)
		n, err := p.in.Read(buf)
		if n > 0 {
			select {
			case p.keys <- buf[:n]:
			case <-p.stop:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close stops reading answers.
func (p *prompter) Close() {
	p.startOnce.Do(func() {}) // no reader from now on
	close(p.stop)
	if c, ok := p.in.(io.Closer); ok {
		_ = c.Close()
		if p.done != nil {
			<-p.done
		}
	}
}

// ask asks question and waits for y, n or a. It gives up with
// answerCancelled when ctx ends or cancel is closed, and answers no at the
// end of input, on Ctrl-D, and on Ctrl-C (which also interrupts).
func (p *prompter) ask(ctx context.Context, cancel <-chan struct{}, question string) answer {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return answerCancelled
	case <-cancel:
		return answerCancelled
	}
	defer func() { <-p.sem }()
	p.start()
	resume := p.suspend()
	defer resume()
	// Keys typed before the question was asked are not its answer.
	select {
	case <-p.keys:
	default:
	}
	// Raw mode before the question: a key typed as soon as it shows must
	// not be echoed and held by the line discipline. Raw mode also stops
	// the terminal from turning "\n" into "\r\n"; write does it instead.
	raw, restoreRaw := false, func() {}
	if p.raw != nil {
		// Without raw mode the question still works, after Enter.
		if r, err := p.raw(); err == nil {
			raw, restoreRaw = true, r
		}
	}
	restore := func() {
		if raw {
			restoreRaw()
			raw = false
		}
	}
	defer restore()
	write := func(s string) {
		if raw {
			s = strings.ReplaceAll(s, "\n", "\r\n")
		}
		_, _ = io.WriteString(p.out, s)
	}
	// say writes the outcome, with the mode restored.
	say := func(s string) {
		restore()
		write(s)
	}
	write(question)
	for {
		select {
		case keys, ok := <-p.keys:
			if !ok {
				say("\n")
				return answerNo
			}
			// Keys that came in the same read as the answer are dropped
			// with it: a paste is not a series of answers.
			for _, k := range keys {
				switch k {
				case 'y', 'Y':
					say("yes\n")
					return answerYes
				case 'n', 'N', keyCtrlD:
					say("no\n")
					return answerNo
				case 'a', 'A':
					say("always\n")
					return answerAlways
				case keyCtrlC:
					say("^C: no, and the turn is interrupted\n")
					p.interrupt()
					return answerNo
				case '\r', '\n', ' ', '\t':
					// Enter after the key, from habit: not an answer.
				default:
					write("\n  please press y, n or a: ")
				}
			}
		case <-ctx.Done():
			say("(cancelled)\n")
			return answerCancelled
		case <-cancel:
			say("(cancelled)\n")
			return answerCancelled
		}
	}
}
