package acp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
)

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
// request in v1's words (ClientInfo from info, ClientCapabilities from
// capabilities, ProtocolVersion 2), and its answer goes out in v2's.
func (a *AgentConn) initializeV2(ctx context.Context, raw json.RawMessage) (any, error) {
	r := new(V2InitializeRequest)
	if err := decodeParams(raw, r); err != nil {
		if !hasMember(raw, "info") && hasMember(raw, "clientCapabilities", "clientInfo") {
			return nil, fmt.Errorf("%w: initialize asks for protocol version 2 but its params are shaped for version 1 (clientCapabilities/clientInfo, no info); send info and capabilities, or ask for protocol version 1", ErrInvalidParams)
		}
		return nil, err
	}
	caps := ClientCapabilities{}
	if c := r.Capabilities; c != nil {
		caps.Elicitation, caps.Meta = c.Elicitation, c.Meta
		if c.Auth != nil && c.Auth.Terminal != nil {
			caps.Auth = &AuthCapabilities{Terminal: true}
		}
	}
	info := r.Info
	resp, err := a.initialize(ctx, &InitializeRequest{ProtocolVersion: ProtocolVersion2, ClientCapabilities: &caps, ClientInfo: &info, Meta: r.Meta})
	if err != nil {
		return nil, err
	}
	if resp == nil {
		resp = &InitializeResponse{}
	}
	out, err := v2InitializeResponse(resp)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
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
func v2InitializeResponse(r *InitializeResponse) (*V2InitializeResponse, error) {
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
	return out, nil
}

// handleV2 serves the requests of a connection that negotiated v2.
func (a *AgentConn) handleV2(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	return serveExt(ctx, a.agent, req)
}
