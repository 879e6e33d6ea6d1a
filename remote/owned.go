package remote

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/terminal"
)

// owned is the client's record of the terminals it created. A target is
// trusted to run commands, not to tell the client what its terminals
// are: the events of a terminal the client did not create, and an exit
// of one that differs from its first, are inventions and are dropped
// before any subscription sees them. Guarded by Client.mu.
type owned struct {
	terms map[string]*ownedTerm // by terminal key, until released
	// inflight counts a session's creates sent and not yet answered;
	// claims are the terminals started meanwhile, before the answer that
	// names them (the server may send the start first). A session has no
	// more claims than creates in flight, and the claims left when the
	// last is answered were never created: they are forgotten.
	inflight map[acp.SessionID]int
	claims   map[acp.SessionID][]string
	// pending are the creates in flight, by tag: the terminal as asked
	// for, which its EventCreated describes (the target's start names
	// what runs, Argv, not what was asked, Command and Args).
	pending map[string]*terminal.Info
	started uint64 // terminals started, for their order
	ignored int    // events dropped
	told    bool   // the first was reported
}

// ownedTerm is what the client keeps of one of its terminals: how it was
// asked for and started, and its first exit.
type ownedTerm struct {
	asked    *terminal.Info // the create's request, once answered
	info     *terminal.Info // as its EventCreated described it; nil until started
	n        uint64         // order of start
	exited   bool
	status   string // acp.TerminalExitStatus.String()
	timedOut bool
	total    uint64
}

func newOwned() owned {
	return owned{terms: map[string]*ownedTerm{}, inflight: map[acp.SessionID]int{}, claims: map[acp.SessionID][]string{},
		pending: map[string]*terminal.Info{}}
}

// creating counts a create about to be sent, tagged tag, for the
// terminal asked.
func (c *Client) creating(sid acp.SessionID, tag string, asked *terminal.Info) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight[sid]++
	c.pending[tag] = asked
}

// created records the answer to a create: the terminal it names is this
// client's (ok), and once no create of the session is in flight, the
// terminals the target said it started without a create to show for them
// are forgotten.
func (c *Client) created(sid acp.SessionID, tag string, tid acp.TerminalID, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight[sid]--
	asked := c.pending[tag]
	delete(c.pending, tag)
	if ok {
		c.sessions[sid] = true
		key := termKey(sid, tid)
		if i := slices.Index(c.claims[sid], key); i >= 0 {
			c.claims[sid] = slices.Delete(c.claims[sid], i, i+1)
		} else if c.terms[key] == nil {
			c.terms[key] = &ownedTerm{}
		}
		if t := c.terms[key]; t != nil && t.asked == nil {
			t.asked = asked
		}
	}
	if c.inflight[sid] > 0 {
		return
	}
	for _, key := range c.claims[sid] {
		delete(c.terms, key)
		c.ignoreLocked("a start of a terminal this client did not create", key)
	}
	delete(c.claims, sid)
	delete(c.inflight, sid)
}

// admit reports whether an event from the target is of a terminal this
// client created, and not a second, different exit of one; it counts
// (and reports once) those it refuses.
func (c *Client) admit(w *wireEvent) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.terms[w.key]
	sid := w.ev.SessionID
	if t == nil {
		if w.ev.Kind != terminal.EventCreated || len(c.claims[sid]) >= c.inflight[sid] {
			c.ignoreLocked(eventName(w.ev.Kind)+" of a terminal this client did not create", w.key)
			return false
		}
		t = &ownedTerm{}
		c.terms[w.key] = t
		c.claims[sid] = append(c.claims[sid], w.key)
	}
	switch w.ev.Kind {
	case terminal.EventCreated:
		if t.info == nil {
			asked := t.asked
			if asked == nil && w.tag != "" {
				// A tag describes one terminal: a second start under it
				// (a target inventing terminals) is described by its argv.
				asked = c.pending[w.tag]
				delete(c.pending, w.tag)
			}
			t.info = c.describe(w.ev.Info, asked)
			c.started++
			t.n = c.started
		}
		info := *t.info
		w.ev.Info = &info
	case terminal.EventExited:
		status := w.ev.Status.String()
		if t.exited {
			// A restarted stream (Resume) replays the exit as it was.
			if status != t.status || w.ev.TimedOut != t.timedOut || w.offset != t.total {
				c.ignoreLocked("a second exit, unlike the first, of a terminal", w.key)
				return false
			}
			return true
		}
		t.exited, t.status, t.timedOut, t.total = true, status, w.ev.TimedOut, w.offset
	case terminal.EventReleased:
		delete(c.terms, w.key)
		kick(c.changed)
	}
	return true
}

// describe is a terminal's Info as the target started it (started) and
// as it was asked for (asked, nil when unknown): what the target runs,
// where and with what pid, and the request's Command, Args and Env, with
// the client's Where and Sandbox.
func (c *Client) describe(started, asked *terminal.Info) *terminal.Info {
	info := terminal.Info{}
	if started != nil {
		info = *started
	}
	switch {
	case asked != nil:
		info.Command, info.Args, info.Shell, info.Env = asked.Command, asked.Args, asked.Shell, asked.Env
	case len(info.Argv) > 0:
		info.Command, info.Args = info.Argv[0], info.Argv[1:]
	}
	info.Where, info.Sandbox = c.where, c.applied
	return &info
}

// cutOff ends, for the subscriptions, the terminals the end of the
// connection cut off: an EventExited for those whose exit was not
// heard, with the reason in Lost in place of a status, and an
// EventReleased for each, in the order they started. c.mu is held.
func (c *Client) cutOffLocked() {
	why := c.lostReasonLocked()
	keys := make([]string, 0, len(c.terms))
	for key := range c.terms {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(c.terms[a].n, c.terms[b].n) })
	for _, key := range keys {
		t := c.terms[key]
		sid, tid, _ := strings.Cut(key, "\x00")
		ev := terminal.Event{SessionID: acp.SessionID(sid), TerminalID: acp.TerminalID(tid), Lost: why}
		if !t.exited {
			ev.Kind = terminal.EventExited
			c.deliverLocked(wireEvent{ev: ev, key: key, offset: t.total})
		}
		ev.Kind = terminal.EventReleased
		c.deliverLocked(wireEvent{ev: ev, key: key})
		delete(c.terms, key)
	}
	kick(c.changed)
}

func eventName(k terminal.EventKind) string {
	switch k {
	case terminal.EventCreated:
		return "a start"
	case terminal.EventOutput:
		return "output"
	case terminal.EventExited:
		return "an exit"
	case terminal.EventReleased:
		return "a release"
	}
	return "an event"
}

// ignoreLocked counts a dropped event and reports the first. c.mu is held.
func (c *Client) ignoreLocked(what, key string) {
	c.ignored++
	if c.told {
		return
	}
	c.told = true
	sid, tid, _ := strings.Cut(key, "\x00")
	c.logf("the exec server sent %s (%q, session %q); ignored, as is every other such event",
		what, clip(tid, 64), clip(sid, 64))
}

// IgnoredEvents is how many events the target sent of terminals this
// client did not create (or a second, different exit of one that it
// did), which the subscriptions did not see.
func (c *Client) IgnoredEvents() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ignored
}

func termKey(sid acp.SessionID, tid acp.TerminalID) string { return string(sid) + "\x00" + string(tid) }

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// maxLogged bounds the problems of the connection (lines that are not
// messages, above all) a client reports through ClientOptions.Logf: a
// target that writes a line of noise per message must not flood the
// user's terminal.
const maxLogged = 8

// boundedLogf reports the first n problems through logf, then says once
// that it stops.
func boundedLogf(logf func(string, ...any), n int32) func(string, ...any) {
	if logf == nil {
		return func(string, ...any) {}
	}
	var count atomic.Int32
	return func(format string, args ...any) {
		switch k := count.Add(1); {
		case k <= n:
			logf(format, args...)
		case k == n+1:
			logf("more problems with what the target sends; no more are reported")
		}
	}
}

// connLogf is the connection's Logf: what goes wrong before the hello is
// answered is the target's start-up talking (a greeting printed by a
// shell start-up file, in any number of lines), counted and reported in
// one line once the hello is answered; after it, logf.
func (c *Client) connLogf(logf func(string, ...any)) func(string, ...any) {
	return func(format string, args ...any) {
		if c.inHello.Load() {
			c.preHello.Add(1)
			return
		}
		logf(format, args...)
	}
}
