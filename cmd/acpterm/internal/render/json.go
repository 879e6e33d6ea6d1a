package render

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/jsonrpc2"
	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/internal/text/utf8cut"
	"github.com/acpterm/acpterm/terminal"
)

// jsonRenderer writes one JSON object per line (NDJSON) for programs. The
// events are documented in docs/cli.md ("JSON events"); their field names
// follow the protocol's camelCase.
type jsonRenderer struct {
	mu    sync.Mutex
	w     io.Writer
	now   Clock
	terms map[acp.TerminalID]*jsonTerm
	err   error  // first write error; later writes are skipped
	line  []byte // a terminal_output line being made, reused
	join  []byte // a carried sequence and the chunk it continues, reused
}

// maxKeptLine bounds the capacity of the buffers kept for the next
// terminal_output line; a rare larger one is left to the collector.
const maxKeptLine = 4 << 20

type jsonTerm struct {
	started time.Time
	carry   []byte // an incomplete UTF-8 sequence at the end of the last chunk
	// invalid: the data written so far ends in a run of invalid UTF-8,
	// replaced by its U+FFFD; the run may go on in the next chunk.
	invalid bool
	prefix  string // a terminal_output line up to its data (outputPrefix)
}

// NewJSON returns the renderer of --format json, writing to w.
// A nil clock means time.Now.
func NewJSON(w io.Writer, now Clock) Renderer {
	if now == nil {
		now = time.Now
	}
	return &jsonRenderer{w: w, now: now, terms: map[acp.TerminalID]*jsonTerm{}}
}

type jsonSessionUpdate struct {
	Event     string          `json:"event"`
	SessionID acp.SessionID   `json:"sessionId"`
	Update    json.RawMessage `json:"update,omitempty"` // written by hand, see SessionUpdate
}

type jsonTerminalCreated struct {
	Event      string         `json:"event"`
	SessionID  acp.SessionID  `json:"sessionId"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Command    string         `json:"command"`
	Args       []string       `json:"args"`
	Cwd        string         `json:"cwd"`
	PID        int            `json:"pid,omitempty"`
	// Where is the target the command runs on (terminal.Info.Where);
	// absent for this machine.
	Where string `json:"where,omitempty"`
	// ToolCallID is the tool call the terminal shows under when the
	// agent did not embed it but named the call another way
	// (terminal.Info.ToolCall): terminal_created comes again, with the
	// same terminalId, when the terminal is tied to the call.
	ToolCallID acp.ToolCallID `json:"toolCallId,omitempty"`
	// OutputByteLimit is the effective limit (the request's, clamped);
	// absent for a display terminal.
	OutputByteLimit *uint64 `json:"outputByteLimit,omitempty"`
	// Display marks a command the agent runs itself and streams to the
	// client for display (the dialects of display_meta.go and
	// display_v2.go): what the text renderer shows as "run by the agent".
	// A display terminal's terminal_created
	// comes again, with the same terminalId, when its tool call brings its
	// command or cwd after it was announced.
	Display bool `json:"display,omitempty"`
	// Sandbox is how the command was confined; absent when acpterm ran it
	// with no sandbox policy. For a display terminal it is the agent's own
	// sandbox, absent when the agent is not confined.
	Sandbox *jsonSandbox `json:"sandbox,omitempty"`
}

// jsonSandbox is a terminal's sandbox.Applied, in short.
type jsonSandbox struct {
	Mode    string `json:"mode"`    // off, read-only, workspace-write
	Network string `json:"network"` // allow, deny, proxy
	// AllowHosts are the host patterns a proxy network lets through.
	AllowHosts []string `json:"allowHosts,omitempty"`
	// Missing names what the kernel could not enforce (best effort only).
	Missing []string `json:"missing,omitempty"`
	// LeftOut names the caches not made writable, and why (a link on
	// their way that a sandboxed command could have made).
	LeftOut []string `json:"leftOut,omitempty"`
	// GitSearchCut: the search for repositories in the caches was cut
	// short, so a repository further on is writable.
	GitSearchCut bool `json:"gitSearchCut,omitempty"`
}

type jsonTerminalOutput struct {
	Event      string         `json:"event"`
	TerminalID acp.TerminalID `json:"terminalId"`
	Data       string         `json:"data"`
	Dropped    uint64         `json:"dropped,omitempty"`
}

type jsonTerminalExit struct {
	Event      string         `json:"event"`
	TerminalID acp.TerminalID `json:"terminalId"`
	ExitCode   *uint32        `json:"exitCode"`
	Signal     *string        `json:"signal"`
	TimedOut   bool           `json:"timedOut"`
	// Lost says why the exit was never heard (terminal.Event.Lost); the
	// exit code and signal are then null.
	Lost       string `json:"lost,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

type jsonPermission struct {
	Event           string                 `json:"event"`
	SessionID       acp.SessionID          `json:"sessionId"`
	ToolCallID      acp.ToolCallID         `json:"toolCallId,omitempty"`
	Title           string                 `json:"title"`
	Decision        string                 `json:"decision"`
	OptionID        acp.PermissionOptionID `json:"optionId,omitempty"`
	TerminalCommand string                 `json:"terminalCommand,omitempty"`
	Reason          string                 `json:"reason,omitempty"`
}

type jsonStop struct {
	Event      string         `json:"event"`
	StopReason acp.StopReason `json:"stopReason"`
}

type jsonError struct {
	Event    string `json:"event"`
	Message  string `json:"message"`
	ExitCode int    `json:"exitCode"`
}

func (r *jsonRenderer) emit(v any) {
	if r.err != nil {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return
	}
	// encoding/json escapes C0 controls but leaves DEL, C1 and bidi
	// characters raw; people watch this output on terminals too.
	_, r.err = r.w.Write(textsafe.JSON(buf.Bytes()))
}

func (r *jsonRenderer) SessionUpdate(n *acp.SessionNotification, raw json.RawMessage) {
	// The update as received. The raw bytes are used as they are when they
	// can be: encoding the decoded value again would give the same object
	// (unknown variants keep their raw JSON) but cost several times the
	// size of a large message.
	update := verbatimUpdate(raw)
	if update == nil {
		// The notification writes the update's discriminator; the update
		// alone would not.
		b, err := json.Marshal(n)
		if err != nil {
			return
		}
		if update = verbatimUpdate(b); update == nil {
			return
		}
	}
	head, err := json.Marshal(jsonSessionUpdate{Event: "session_update", SessionID: n.SessionID})
	if err != nil {
		return
	}
	head = textsafe.JSON(head) // the session ID is the agent's, as emit's strings are
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	// head is {"event":…,"sessionId":…}: the update goes in before its
	// closing brace, written in place rather than copied into one line.
	line := net.Buffers{head[:len(head)-1], []byte(`,"update":`), textsafe.JSON(update), []byte("}\n")}
	_, r.err = line.WriteTo(r.w)
}

// verbatimUpdate returns the "update" member of raw session/update
// params, or nil when there is none. The engine checked that the message
// is valid JSON on one line, so the member has no newline; a tab or CR in
// it can only be whitespace between tokens, and it is compacted away.
// Valid JSON may still hold invalid UTF-8 in its strings, which
// textsafe.JSON leaves as it is (encoding/json never writes any): each
// invalid byte becomes U+FFFD, as the decoder reads it.
func verbatimUpdate(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	// A map, not a struct: encoding/json matches a struct's fields
	// whatever the case of the member's name, and "UPDATE" is not the
	// update acpterm decoded and acted on (acp matches names exactly).
	var p map[string]jsonrpc2.RawSpan
	if json.Unmarshal(raw, &p) != nil || len(p["update"]) == 0 {
		return nil
	}
	u := json.RawMessage(p["update"])
	if bytes.IndexByte(u, '\r') >= 0 || bytes.IndexByte(u, '\t') >= 0 {
		var b bytes.Buffer
		if json.Compact(&b, u) != nil {
			return nil
		}
		u = b.Bytes()
	}
	if !utf8.Valid(u) {
		u = replaceInvalidUTF8(u)
	}
	return u
}

// replaceInvalidUTF8 is b with each byte that is not part of a valid
// UTF-8 sequence replaced by U+FFFD.
func replaceInvalidUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

func (r *jsonRenderer) TerminalEvent(ev terminal.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.terms[ev.TerminalID]
	switch ev.Kind {
	case terminal.EventCreated:
		// A second one, for a display terminal, brings its command or cwd
		// (display.go): written again, as the upsert it is.
		// One that ties a terminal released already (its tool call came
		// late) is written, and not kept.
		if t == nil && (ev.Info == nil || ev.Info.ToolCall == "") {
			t = &jsonTerm{started: r.now()}
			r.terms[ev.TerminalID] = t
		}
		e := jsonTerminalCreated{Event: "terminal_created", SessionID: ev.SessionID, TerminalID: ev.TerminalID, Args: []string{}}
		if ev.Info != nil {
			e.Command, e.Cwd, e.PID, e.Where, e.ToolCallID = ev.Info.Command, ev.Info.Cwd, ev.Info.PID, ev.Info.Where, ev.Info.ToolCall
			if len(ev.Info.Args) > 0 {
				e.Args = ev.Info.Args
			}
			if e.Display = isDisplay(ev.Info); !e.Display {
				limit := ev.Info.OutputByteLimit
				e.OutputByteLimit = &limit
			}
			if a := ev.Info.Sandbox; a != nil {
				e.Sandbox = &jsonSandbox{Mode: a.Mode.String(), Network: a.Network.String(), AllowHosts: a.AllowHosts, Missing: a.Missing,
					LeftOut: a.LeftOut, GitSearchCut: a.GitSearchCut}
			}
		}
		r.emit(e)
	case terminal.EventOutput:
		if t == nil {
			t = &jsonTerm{started: r.now()}
			r.terms[ev.TerminalID] = t
		}
		r.output(t, ev)
	case terminal.EventExited:
		var d time.Duration
		if t != nil {
			if len(t.carry) > 0 {
				// The cut sequence is invalid after all: one U+FFFD, unless it
				// goes on a run that already has its own.
				if !t.invalid {
					r.emit(jsonTerminalOutput{Event: "terminal_output", TerminalID: ev.TerminalID, Data: "\uFFFD"})
				}
				t.carry = nil
			}
			d = r.now().Sub(t.started)
		}
		e := jsonTerminalExit{Event: "terminal_exit", TerminalID: ev.TerminalID, DurationMs: d.Milliseconds()}
		if st := ev.Status; st != nil {
			e.ExitCode, e.Signal, e.TimedOut = st.ExitCode, st.Signal, ev.TimedOut
		}
		e.Lost = ev.Lost
		r.emit(e)
	case terminal.EventReleased:
		delete(r.terms, ev.TerminalID)
	}
}

// output writes a terminal_output event: ev.Data after what was carried
// from the previous one, up to an incomplete character at its end, which
// is carried to the next.
func (r *jsonRenderer) output(t *jsonTerm, ev terminal.Event) {
	if ev.Dropped > 0 {
		// The sequence it began is gone, and the bytes lost separate
		// what comes next from any run of invalid UTF-8 before.
		t.carry, t.invalid = t.carry[:0], false
	}
	data := ev.Data
	if len(t.carry) > 0 {
		r.join = append(append(r.join[:0], t.carry...), data...)
		data = r.join
	}
	n := len(data) - utf8cut.IncompleteSuffix(data)
	whole, carry := data[:n], data[n:]
	t.carry = append(t.carry[:0], carry...)
	if len(whole) == 0 && ev.Dropped == 0 {
		return
	}
	if r.err != nil {
		return
	}
	if t.prefix == "" {
		t.prefix = outputPrefix(ev.TerminalID)
	}
	r.line, t.invalid = appendTerminalOutput(r.line[:0], t.prefix, whole, ev.Dropped, t.invalid)
	_, r.err = r.w.Write(r.line)
	if cap(r.line) > maxKeptLine {
		r.line = nil
	}
	if cap(r.join) > maxKeptLine {
		r.join = nil
	}
}

// outputPrefix is the start of a terminal's terminal_output lines, up to
// the opening quote of their data, encoded as emit encodes it.
func outputPrefix(terminalID acp.TerminalID) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(terminalID) // a string always encodes
	id := textsafe.JSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return `{"event":"terminal_output","terminalId":` + string(id) + `,"data":"`
}

func (r *jsonRenderer) Permission(p PermissionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(jsonPermission{Event: "permission", SessionID: p.SessionID, ToolCallID: p.ToolCallID, Title: p.Title,
		Decision: p.Decision, OptionID: p.OptionID, TerminalCommand: p.TerminalCommand, Reason: p.Reason})
}

func (r *jsonRenderer) Tick() {}

func (r *jsonRenderer) Suspend() func() { return func() {} }

func (r *jsonRenderer) Finish(reason acp.StopReason) {
	if reason == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(jsonStop{Event: "stop", StopReason: reason})
}

func (r *jsonRenderer) Error(message string, exitCode int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(jsonError{Event: "error", Message: message, ExitCode: exitCode})
}
