package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

// Version negotiation. ACP picks the protocol version per connection in
// initialize: the client asks for one, the agent answers with the one it
// will speak (the same, or an older one it supports). Both connections
// record the outcome (ProtocolVersion) and speak it from then on.
//
// Negotiation breaks in practice in two ways, and both end initialize with
// an error here rather than a connection that half works: a client that
// asks for 2 with a v1-shaped body (clientCapabilities, no info), which
// AgentConn refuses with invalid params naming the problem; and an agent
// that answers 2 to a client that did not offer it, or answers 2 with a
// v1-shaped body, which ClientConn.Initialize reports as
// ErrVersionNegotiation.

// ErrVersionNegotiation is wrapped by the error ClientConn.Initialize
// returns when the agent's answer names a protocol version the client did
// not offer, or does not have the shape of the version it names. (A Go
// client offers 2 with ConnOptions.OfferV2.)
var ErrVersionNegotiation = errors.New("acp: protocol version negotiation failed")

// ErrNotInVersion is wrapped by the error of a call that does not exist in
// the protocol version the connection negotiated (session/load or
// terminal/create in v2, terminal/cancel in v1); nothing is sent.
var ErrNotInVersion = errors.New("acp: method does not exist in the negotiated protocol version")

// negotiated is the protocol version a connection speaks: 0 before
// initialize has been answered.
type negotiated struct{ v atomic.Uint32 }

func (n *negotiated) version() ProtocolVersion { return ProtocolVersion(n.v.Load()) }

// ProtocolVersion returns the protocol version the connection negotiated
// in initialize: ProtocolVersion1 or ProtocolVersion2, or 0 before the
// agent's answer has been taken.
func (c *ClientConn) ProtocolVersion() ProtocolVersion { return c.negotiated.version() }

// ProtocolVersion returns the protocol version the connection negotiated
// in initialize: ProtocolVersion1 or ProtocolVersion2, or 0 before it has
// been answered.
func (a *AgentConn) ProtocolVersion() ProtocolVersion { return a.negotiated.version() }

func (n *negotiated) set(v ProtocolVersion) { n.v.Store(uint32(v)) }

func (n *negotiated) isV2() bool { return n.v.Load() == uint32(ProtocolVersion2) }

// notInVersion is the error of a call that v does not have.
func notInVersion(method string, v ProtocolVersion) error {
	return fmt.Errorf("%w: %s (protocol version %d)", ErrNotInVersion, method, v)
}

// Initialize sends initialize. The request's client capabilities are filled
// in from the interfaces the Client implements (terminal, fs read and write);
// a nil request sends protocol version 1 with those capabilities.
//
// With ConnOptions.OfferV2 it asks for protocol version 2 instead: the
// params carry v2's info and capabilities (from req's ClientInfo and
// ClientCapabilities) and, for an agent that only speaks v1 and answers 1,
// v1's clientInfo and clientCapabilities too, which a v2 agent ignores. An
// agent that answers 1 is spoken to in v1 from then on; one that refuses 2
// with unsupported-protocol-version (-32022) naming 1 gets a v1
// initialize. The v2 answer is returned in v1's words (agentInfo,
// agentCapabilities, authMethods, with ProtocolVersion 2); V2Initialized
// has it whole. ProtocolVersion says which version the connection speaks.
func (c *ClientConn) Initialize(ctx context.Context, req *InitializeRequest) (*InitializeResponse, error) {
	resp, _, err := c.negotiate(ctx, req)
	return resp, err
}

// negotiate is Initialize; it also returns the answer's JSON in v1's words
// (as the agent sent it, in v1), for InitializeAuth.
func (c *ClientConn) negotiate(ctx context.Context, req *InitializeRequest) (*InitializeResponse, json.RawMessage, error) {
	v1 := c.initializeRequest(req)
	if c.opts == nil || !c.opts.OfferV2 {
		return c.initializeV1(ctx, v1, false)
	}
	offer, err := initializeOffer(v1, !c.opts.OnlyV2)
	if err != nil {
		return nil, nil, err
	}
	var raw json.RawMessage
	// The version takes effect where the answer falls among the agent's
	// messages: one it sends right behind its answer is read in v2 already.
	early := func(res json.RawMessage) {
		var head struct {
			ProtocolVersion ProtocolVersion `json:"protocolVersion"`
		}
		if json.Unmarshal(res, &head) == nil && head.ProtocolVersion == ProtocolVersion2 {
			c.negotiated.set(ProtocolVersion2)
		}
	}
	if err := c.rpc.CallOrdered(ctx, MethodInitialize, offer, &raw, nil, early); err != nil {
		err = peerCallError(MethodInitialize, err)
		if supportsOnly1(err) {
			v1.ProtocolVersion = ProtocolVersion1
			return c.initializeV1(ctx, v1, true)
		}
		return nil, nil, err
	}
	var head struct {
		ProtocolVersion *ProtocolVersion `json:"protocolVersion"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.ProtocolVersion == nil {
		return nil, nil, fmt.Errorf("%w: the agent's initialize result has no protocolVersion: %.200s", ErrVersionNegotiation, raw)
	}
	switch *head.ProtocolVersion {
	case ProtocolVersion2:
		resp, err := c.initializedV2(raw)
		if err != nil {
			return nil, nil, err
		}
		v1raw, err := json.Marshal(resp)
		return resp, v1raw, err
	case ProtocolVersion1:
		resp := new(InitializeResponse)
		if err := json.Unmarshal(raw, resp); err != nil {
			return nil, nil, fmt.Errorf("%w: the agent answered protocol version 1 with a result v1 cannot read: %v", ErrVersionNegotiation, err)
		}
		c.negotiated.set(ProtocolVersion1)
		return resp, raw, nil
	}
	return nil, nil, fmt.Errorf("%w: the agent answered protocol version %d to an offer of 2; this client speaks 1 and 2", ErrVersionNegotiation, *head.ProtocolVersion)
}

// initializeV1 sends a v1 initialize. afterOffer: the agent refused 2.
func (c *ClientConn) initializeV1(ctx context.Context, req *InitializeRequest, afterOffer bool) (*InitializeResponse, json.RawMessage, error) {
	res, err := call[rawInitialize](ctx, &c.conn, MethodInitialize, req)
	if err != nil {
		if !afterOffer && supportsOnly(err, ProtocolVersion2) {
			return nil, nil, fmt.Errorf("%w: the agent speaks only protocol version 2, and the client asked for 1: %w", ErrVersionNegotiation, err)
		}
		return nil, nil, err
	}
	if v := res.resp.ProtocolVersion; v >= ProtocolVersion2 {
		// An answer of 2 to an offer of 1 is the agent's mistake (it must
		// answer 1 or refuse); going on in v1 would misread its prompt
		// acknowledgements as turn ends.
		return nil, nil, fmt.Errorf("%w: the agent answered protocol version %d to a client that asked for 1", ErrVersionNegotiation, v)
	}
	c.negotiated.set(ProtocolVersion1)
	return &res.resp, res.raw, nil
}

// supportsOnly1 reports whether err is an unsupported-protocol-version
// answer whose data lists version 1.
func supportsOnly1(err error) bool {
	d, ok := unsupportedVersion(err)
	return ok && slices.Contains(d.Supported, ProtocolVersion1)
}

// supportsOnly reports whether err is an unsupported-protocol-version
// answer whose data lists v and not 1.
func supportsOnly(err error, v ProtocolVersion) bool {
	d, ok := unsupportedVersion(err)
	return ok && slices.Contains(d.Supported, v) && !slices.Contains(d.Supported, ProtocolVersion1)
}

func unsupportedVersion(err error) (*V2UnsupportedProtocolVersionErrorData, bool) {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnsupportedProtocolVersion || len(e.Data) == 0 {
		return nil, false
	}
	d := new(V2UnsupportedProtocolVersionErrorData)
	if json.Unmarshal(e.Data, d) != nil {
		return nil, false
	}
	return d, true
}

// unknownImplementation stands in for a required v2 info the Go side was
// not given, as the TypeScript SDK does.
var unknownImplementation = Implementation{Name: "unknown", Version: "unknown"}

// initializeOffer is the params of a v2 initialize built from a v1 one,
// with v1's clientInfo and clientCapabilities kept beside v2's members
// when withV1.
func initializeOffer(v1 *InitializeRequest, withV1 bool) (json.RawMessage, error) {
	r := V2InitializeRequest{ProtocolVersion: ProtocolVersion2, Info: unknownImplementation, Meta: v1.Meta}
	if v1.ClientInfo != nil {
		r.Info = *v1.ClientInfo
	}
	if cc := v1.ClientCapabilities; cc != nil {
		caps := V2ClientCapabilities{Elicitation: cc.Elicitation, Meta: cc.Meta}
		if cc.Auth != nil && cc.Auth.Terminal {
			caps.Auth = &V2ClientAuthCapabilities{Terminal: &V2TerminalAuthCapabilities{}}
		}
		r.Capabilities = &caps
	}
	b, err := json.Marshal(r)
	if err != nil || !withV1 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if v1.ClientCapabilities != nil {
		m["clientCapabilities"], _ = json.Marshal(v1.ClientCapabilities)
	}
	if v1.ClientInfo != nil {
		m["clientInfo"], _ = json.Marshal(v1.ClientInfo)
	}
	return json.Marshal(m)
}

// initializedV2 takes the agent's v2 answer.
func (c *ClientConn) initializedV2(raw json.RawMessage) (*InitializeResponse, error) {
	resp := new(V2InitializeResponse)
	if err := json.Unmarshal(raw, resp); err != nil {
		c.negotiated.set(0) // set early, on the version alone
		if hasMember(raw, "agentCapabilities", "agentInfo") {
			return nil, fmt.Errorf("%w: the agent answered protocol version 2 with a v1-shaped result (agentCapabilities/agentInfo, no info): %v", ErrVersionNegotiation, err)
		}
		return nil, fmt.Errorf("%w: the agent's v2 initialize result: %v", ErrVersionNegotiation, err)
	}
	c.v2init.Store(resp)
	c.negotiated.set(ProtocolVersion2)
	return v1InitializeResponse(resp)
}

// V2Initialized returns the agent's initialize result of a connection that
// negotiated v2, nil otherwise.
func (c *ClientConn) V2Initialized() *V2InitializeResponse { return c.v2init.Load() }

// v1InitializeResponse says a v2 initialize result in v1's words.
func v1InitializeResponse(r *V2InitializeResponse) (*InitializeResponse, error) {
	info := r.Info
	out := &InitializeResponse{ProtocolVersion: r.ProtocolVersion, AgentInfo: &info, Meta: r.Meta}
	ac := AgentCapabilities{}
	if caps := r.Capabilities; caps != nil {
		ac.Meta = caps.Meta
		if s := caps.Session; s != nil {
			// Supplying session means the baseline methods, list, resume
			// and close among them.
			ac.SessionCapabilities = &SessionCapabilities{
				List: &SessionListCapabilities{}, Resume: &SessionResumeCapabilities{}, Close: &SessionCloseCapabilities{},
				Delete: s.Delete, AdditionalDirectories: s.AdditionalDirectories, Meta: s.Meta,
			}
			if p := s.Prompt; p != nil {
				ac.PromptCapabilities = &PromptCapabilities{Image: p.Image != nil, Audio: p.Audio != nil, EmbeddedContext: p.EmbeddedContext != nil, Meta: p.Meta}
			}
			if m := s.MCP; m != nil {
				ac.MCPCapabilities = &MCPCapabilities{HTTP: m.HTTP != nil, Meta: m.Meta}
			}
		}
	}
	if len(r.AuthMethods) > 0 {
		// v2 advertises auth/login and auth/logout by listing methods.
		ac.Auth = &AgentAuthCapabilities{Logout: &LogoutCapabilities{}}
		out.AuthMethods = v1AuthMethods(r.AuthMethods)
	}
	out.AgentCapabilities = &ac
	return out, nil
}

// hasMember reports whether the JSON object raw has any of the members.
func hasMember(raw json.RawMessage, names ...string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, n := range names {
		if _, ok := m[n]; ok {
			return true
		}
	}
	return false
}

// initializeAny serves initialize in the version the client asks for: 2 or
// later gets v2, anything else v1.
func (a *AgentConn) initializeAny(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	var head struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
	}
	var asked uint64
	if json.Unmarshal(req.Params, &head) != nil || json.Unmarshal(head.ProtocolVersion, &asked) != nil || asked < uint64(ProtocolVersion2) {
		res, err := serve(ctx, req, a.initialize)
		if err == nil {
			a.negotiated.set(ProtocolVersion1)
		}
		return res, err
	}
	return a.initializeV2(ctx, req.Params)
}

// initializeV2 answers a v2 initialize: the Agent's Initialize sees the
// request in v1's words (ProtocolVersion 2; ClientInfo from info, else the
// offer's v1 clientInfo; ClientCapabilities from the offer's v1
// clientCapabilities, what the client gives an agent that answers 1, with
// v2's elicitation, auth and _meta), and its answer goes out in v2's. An
// Agent that answers ProtocolVersion 1 (one that needs the client's
// terminals or fs, which v2 does not have) is served v1 instead: its
// answer goes out in v1's words and the connection speaks v1.
func (a *AgentConn) initializeV2(ctx context.Context, raw json.RawMessage) (any, error) {
	r := new(V2InitializeRequest)
	if err := decodeParams(raw, r); err != nil {
		if !hasMember(raw, "info") && hasMember(raw, "clientCapabilities", "clientInfo") {
			return nil, fmt.Errorf("%w: initialize asks for protocol version 2 but its params are shaped for version 1 (clientCapabilities/clientInfo, no info); send info and capabilities, or ask for protocol version 1", ErrInvalidParams)
		}
		return nil, err
	}
	// What the offer carries for an agent that answers 1 (ClientConn
	// sends both); members that do not decode are left out, as a v2
	// agent ignores them.
	var v1 struct {
		ClientCapabilities *ClientCapabilities `json:"clientCapabilities"`
		ClientInfo         *Implementation     `json:"clientInfo"`
	}
	_ = json.Unmarshal(raw, &v1)
	v2caps := ClientCapabilities{}
	if c := r.Capabilities; c != nil {
		v2caps.Elicitation, v2caps.Meta = c.Elicitation, c.Meta
		if c.Auth != nil && c.Auth.Terminal != nil {
			v2caps.Auth = &AuthCapabilities{Terminal: true}
		}
	}
	offered := v2caps
	if v1.ClientCapabilities != nil {
		offered = *v1.ClientCapabilities
		offered.Elicitation, offered.Auth, offered.Meta = v2caps.Elicitation, v2caps.Auth, v2caps.Meta
	}
	info := r.Info
	resp, answered, err := a.initializeAs(ctx, &InitializeRequest{ProtocolVersion: ProtocolVersion2, ClientCapabilities: &offered, ClientInfo: &info, Meta: r.Meta})
	if err != nil {
		return nil, err
	}
	if answered == ProtocolVersion1 && resp != nil {
		a.negotiated.set(ProtocolVersion1)
		return resp, nil
	}
	if resp == nil {
		resp = &InitializeResponse{}
	}
	out := v2InitializeResponse(resp)
	a.mu.Lock()
	a.clientCaps = &v2caps
	a.clientCapsV2 = r.Capabilities
	a.mu.Unlock()
	a.negotiated.set(ProtocolVersion2)
	return out, nil
}

// ClientCapabilitiesV2 returns the capabilities a client that negotiated
// v2 advertised, nil otherwise. ClientCapabilities has them in v1's words.
func (a *AgentConn) ClientCapabilitiesV2() *V2ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clientCapsV2
}

// v2InitializeResponse says an Agent's v1 initialize result in v2's words.
func v2InitializeResponse(r *InitializeResponse) *V2InitializeResponse {
	out := &V2InitializeResponse{ProtocolVersion: ProtocolVersion2, Info: unknownImplementation, Meta: r.Meta}
	if r.AgentInfo != nil {
		out.Info = *r.AgentInfo
	}
	// Sessions are v2's baseline (new, list, resume, close, prompt,
	// cancel, update): AgentConn serves those an Agent lacks (handleV2).
	sess := &V2SessionCapabilities{MCP: &V2MCPCapabilities{Stdio: &V2MCPStdioCapabilities{}}}
	caps := &V2AgentCapabilities{Session: sess}
	if ac := r.AgentCapabilities; ac != nil {
		caps.Meta = ac.Meta
		if p := ac.PromptCapabilities; p != nil {
			sess.Prompt = &V2PromptCapabilities{
				Image:           presence[V2PromptImageCapabilities](p.Image),
				Audio:           presence[V2PromptAudioCapabilities](p.Audio),
				EmbeddedContext: presence[V2PromptEmbeddedContextCapabilities](p.EmbeddedContext),
				Meta:            p.Meta,
			}
		}
		if m := ac.MCPCapabilities; m != nil {
			sess.MCP.HTTP = presence[V2MCPHTTPCapabilities](m.HTTP)
			sess.MCP.Meta = m.Meta
		}
		if sc := ac.SessionCapabilities; sc != nil {
			sess.Delete, sess.AdditionalDirectories, sess.Meta = sc.Delete, sc.AdditionalDirectories, sc.Meta
		}
	}
	out.Capabilities = caps
	out.AuthMethods = v2AuthMethods(r.AuthMethods)
	return out
}
