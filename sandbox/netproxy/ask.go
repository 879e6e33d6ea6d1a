package netproxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Asking instead of refusing: a Proxy whose Options.Ask is set puts a
// connection to a host that is not on its list to the Asker, which asks
// its Decide hook and waits for the answer, bounded.

// Decision is the answer to a Question.
type Decision int

const (
	// Deny refuses the connection asked about.
	Deny Decision = iota
	// AllowOnce lets the connection asked about through, and no other.
	AllowOnce
	// AllowSession lets it through, and every later connection to the
	// same host and port of every proxy sharing the Asker.
	AllowSession
	// NotAsked refuses the connection without having asked anyone, for a
	// Decide that finds nobody to ask: the refusal then says only that
	// the host is not on the list, as with no Decide at all.
	NotAsked
)

func (d Decision) String() string {
	switch d {
	case AllowOnce:
		return "allow once"
	case AllowSession:
		return "allow for the session"
	case NotAsked:
		return "deny, not asked"
	}
	return "deny"
}

// Question is what Decide is asked: a connection to Target, made by
// Client, through Protocol ("http", "connect", "socks5").
type Question struct {
	Protocol string
	Target   Target
	// Client is who made the connection, as the proxy knows it: the label
	// of the credentials it presented (Proxy.AddClient), else
	// Options.Client; "" when neither says. Never anything the
	// connection itself chose.
	Client string
}

// Defaults of an Asker.
const (
	DefaultAskTimeout = 2 * time.Minute
	DefaultMaxPending = 16
)

// An Asker decides about the hosts that are not on a proxy's list, for
// every proxy that shares it (Options.Ask): one question per host and
// port at a time (later connections to it wait for that answer, then
// are checked again: AllowSession lets them through, anything else asks
// again), at most MaxPending questions at once (past that a connection
// is refused at once), each answered within Timeout (else refused). Its
// zero value, with Decide set, is ready to use.
type Asker struct {
	// Decide asks whoever decides. It must return once ctx is done (the
	// timeout, or the proxy closing); what it returns then is ignored.
	// nil refuses every connection at once.
	Decide func(ctx context.Context, q Question) Decision
	// Timeout bounds the wait for an answer; 0 is DefaultAskTimeout.
	Timeout time.Duration
	// MaxPending bounds the questions waiting at once; 0 is
	// DefaultMaxPending.
	MaxPending int

	mu      sync.Mutex
	granted []string                 // "host:port" allowed for the session, in order
	asking  map[string]chan struct{} // closed when the question about a key is answered
}

// Granted returns what AllowSession added, as "host:port" patterns.
func (a *Asker) Granted() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.granted)
}

// Grant adds t, as AllowSession would.
func (a *Asker) Grant(t Target) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.granted, t.String()) {
		a.granted = append(a.granted, t.String())
	}
}

func (a *Asker) isGranted(t Target) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.granted, t.String())
}

// decide asks about q, or waits for the question about the same target
// already asked, and returns "" when the connection may go, else why not.
func (a *Asker) decide(ctx context.Context, q Question) string {
	for {
		a.mu.Lock()
		key := q.Target.String()
		if slices.Contains(a.granted, key) {
			a.mu.Unlock()
			return ""
		}
		if wait, ok := a.asking[key]; ok {
			a.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "no answer before the connection ended"
			}
		}
		max := a.MaxPending
		if max <= 0 {
			max = DefaultMaxPending
		}
		if len(a.asking) >= max {
			a.mu.Unlock()
			return fmt.Sprintf("%s is not on the allow-list, and %d questions are waiting already", key, max)
		}
		if a.asking == nil {
			a.asking = map[string]chan struct{}{}
		}
		done := make(chan struct{})
		a.asking[key] = done
		a.mu.Unlock()
		d, why := a.ask(ctx, q)
		a.mu.Lock()
		if d == AllowSession && !slices.Contains(a.granted, key) {
			a.granted = append(a.granted, key)
		}
		delete(a.asking, key)
		close(done)
		a.mu.Unlock()
		return why
	}
}

// ask calls Decide, bounded by Timeout.
func (a *Asker) ask(ctx context.Context, q Question) (Decision, string) {
	if a.Decide == nil {
		return Deny, q.Target.String() + " is not on the allow-list"
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := a.Decide(ctx, q)
	if ctx.Err() != nil {
		return Deny, fmt.Sprintf("%s is not on the allow-list, and no answer came within %v", q.Target, timeout)
	}
	switch d {
	case AllowOnce, AllowSession:
		return d, ""
	case NotAsked:
		return Deny, q.Target.String() + " is not on the allow-list"
	}
	return Deny, q.Target.String() + " is not on the allow-list, and was refused when asked"
}

// Credentials are what a client presents to name itself (Proxy.AddClient).
type Credentials struct {
	User, Password string
}

// URL is the proxy URL with the credentials in it: scheme "http" or
// "socks5h", addr the proxy's host:port.
func (c Credentials) URL(scheme, addr string) string {
	if c.Password == "" {
		return scheme + "://" + addr
	}
	return scheme + "://" + c.User + ":" + c.Password + "@" + addr
}

// credentialUser is the user name of every credential: the password,
// random, tells clients apart.
const credentialUser = "acpterm"

// AddClient makes credentials that name who in the Questions asked
// about the connections presenting them (HTTP Proxy-Authorization
// Basic, or SOCKS5 user name and password), until remove is called. A
// connection presenting none, or unknown ones, is served the same, as
// Options.Client.
func (p *Proxy) AddClient(who string) (c Credentials, remove func()) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	c = Credentials{User: credentialUser, Password: hex.EncodeToString(b[:])}
	p.mu.Lock()
	if p.clients == nil {
		p.clients = map[string]string{}
	}
	p.clients[c.Password] = who
	p.mu.Unlock()
	return c, func() {
		p.mu.Lock()
		delete(p.clients, c.Password)
		p.mu.Unlock()
	}
}

// clientOf is who presented user and password.
func (p *Proxy) clientOf(user, password string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if who, ok := p.clients[password]; ok && user == credentialUser {
		return who
	}
	return p.opt.Client
}

// httpClient is who sent r, by its Proxy-Authorization.
func (p *Proxy) httpClient(r *http.Request) string {
	v := r.Header.Get("Proxy-Authorization")
	scheme, enc, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return p.opt.Client
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return p.opt.Client
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	return p.clientOf(user, pass)
}

// permit decides about a connection to t: "" when it may go (on the
// list, granted for the session, or allowed when asked), else why not.
func (p *Proxy) permit(ctx context.Context, proto string, t Target, who string) string {
	why := p.denyReason(t)
	if why == "" || p.opt.Ask == nil {
		return why
	}
	if p.opt.Ask.isGranted(t) {
		return ""
	}
	ctx, cancel := p.dialContext(ctx)
	defer cancel()
	return p.opt.Ask.decide(ctx, Question{Protocol: proto, Target: t, Client: who})
}
