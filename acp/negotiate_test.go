package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// v2Pair connects a Go client and a Go agent over pipes, the client with opts.
func v2Pair(t *testing.T, agent acp.Agent, client acp.Client, opts *acp.ConnOptions) (*acp.ClientConn, *acp.AgentConn) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := acp.NewAgentConn(agent, toAgentR, toClientW, nil)
	cc := acp.NewClientConn(client, toClientR, toAgentW, opts)
	t.Cleanup(func() {
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	})
	return cc, ac
}

// scripted is a peer that answers each request with answer(method, params) and records what it
// read. It stops when its input ends; Close joins it.
type scripted struct {
	mu   sync.Mutex
	got  []json.RawMessage // params of the requests and notifications it read
	meth []string
	done chan struct{}
}

func newScripted(t *testing.T, r io.Reader, w io.WriteCloser, answer func(method string, params json.RawMessage) string) *scripted {
	return newReactor(t, r, w, func(method, id string, params json.RawMessage) []string {
		if id == "" || method == "" {
			return nil
		}
		if a := answer(method, params); a != "" {
			return []string{`{"jsonrpc":"2.0","id":` + id + `,` + a + `}`}
		}
		return nil
	})
}

// newReactor is a scripted peer that writes react's lines for each message it reads (id is ""
// for a notification; method is "" for a response, and params the whole response).
func newReactor(t *testing.T, r io.Reader, w io.WriteCloser, react func(method, id string, params json.RawMessage) []string) *scripted {
	s := &scripted{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer w.Close()
		lines := bufio.NewScanner(r)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(lines.Bytes(), &m) != nil {
				continue
			}
			if m.Method == "" {
				// A response: react sees it whole, with method "".
				m.Params = append(json.RawMessage(nil), lines.Bytes()...)
			}
			s.mu.Lock()
			s.got = append(s.got, m.Params)
			s.meth = append(s.meth, m.Method)
			s.mu.Unlock()
			for _, l := range react(m.Method, string(m.ID), m.Params) {
				if _, err := io.WriteString(w, l+"\n"); err != nil {
					return
				}
			}
		}
	}()
	return s
}

func (s *scripted) methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.meth...)
}

func (s *scripted) params(i int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]any
	if i < len(s.got) {
		_ = json.Unmarshal(s.got[i], &m)
	}
	return m
}

// clientAgainst connects a ClientConn to a scripted agent.
func clientAgainst(t *testing.T, opts *acp.ConnOptions, answer func(method string, params json.RawMessage) string) (*acp.ClientConn, *scripted) {
	t.Helper()
	return clientWith(t, minimalV1Client{}, opts, func(r io.Reader, w io.WriteCloser) *scripted { return newScripted(t, r, w, answer) })
}

// clientWith connects a ClientConn serving client to the scripted peer start makes.
func clientWith(t *testing.T, client acp.Client, opts *acp.ConnOptions, start func(io.Reader, io.WriteCloser) *scripted) (*acp.ClientConn, *scripted) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	s := start(toAgentR, toClientW)
	cc := acp.NewClientConn(client, toClientR, toAgentW, opts)
	t.Cleanup(func() {
		cc.Close()
		<-s.done
	})
	return cc, s
}

type minimalV1Client struct{}

func (minimalV1Client) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}
func (minimalV1Client) SessionUpdate(context.Context, *acp.SessionNotification) error { return nil }

// namedAgent answers the baseline methods, with a name and some capabilities.
type namedAgent struct{}

func (namedAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s"}, nil
}

func (namedAgent) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (namedAgent) Initialize(_ context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	return &acp.InitializeResponse{
		ProtocolVersion: req.ProtocolVersion, // whichever the client asks for
		AgentInfo:       &acp.Implementation{Name: "named", Version: "1.0"},
		AgentCapabilities: &acp.AgentCapabilities{
			PromptCapabilities: &acp.PromptCapabilities{Image: true},
			MCPCapabilities:    &acp.MCPCapabilities{HTTP: true},
		},
		AuthMethods: []acp.AuthMethod{&acp.AuthMethodAgent{ID: "oauth", Name: "Log in"}},
	}, nil
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNegotiateGoPair(t *testing.T) {
	for _, tc := range []struct {
		name  string
		offer bool
		want  acp.ProtocolVersion
	}{
		{"v1 by default", false, 1},
		{"v2 when offered", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, ac := v2Pair(t, namedAgent{}, minimalV1Client{}, &acp.ConnOptions{OfferV2: tc.offer})
			resp, err := cc.Initialize(ctxFor(t), &acp.InitializeRequest{ClientInfo: &acp.Implementation{Name: "c", Version: "1"}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtocolVersion != tc.want || cc.ProtocolVersion() != tc.want || ac.ProtocolVersion() != tc.want {
				t.Fatalf("answer %d, client %d, agent %d; want %d", resp.ProtocolVersion, cc.ProtocolVersion(), ac.ProtocolVersion(), tc.want)
			}
			// Either way the Go user reads the answer in one vocabulary.
			if resp.AgentInfo == nil || resp.AgentInfo.Name != "named" {
				t.Errorf("agentInfo %+v", resp.AgentInfo)
			}
			if pc := resp.AgentCapabilities.PromptCapabilities; pc == nil || !pc.Image || pc.Audio {
				t.Errorf("prompt capabilities %+v", pc)
			}
			if mc := resp.AgentCapabilities.MCPCapabilities; mc == nil || !mc.HTTP {
				t.Errorf("mcp capabilities %+v", mc)
			}
			if len(resp.AuthMethods) != 1 {
				t.Fatalf("auth methods %v", resp.AuthMethods)
			}
			if m, ok := resp.AuthMethods[0].(*acp.AuthMethodAgent); !ok || m.ID != "oauth" {
				t.Errorf("auth method %#v", resp.AuthMethods[0])
			}
			if got := cc.V2Initialized() != nil; got != tc.offer {
				t.Errorf("V2Initialized() set: %v", got)
			}
			if tc.offer {
				v2 := cc.V2Initialized()
				if v2.Capabilities.Session.MCP.Stdio == nil {
					t.Error("a Go agent serves stdio MCP servers but did not say so in v2")
				}
			}
		})
	}
}

// An agent that only speaks v1 answers 1 to the v2 offer: the client speaks v1 from then on, and
// the agent read the client's v1 capabilities in the offer.
func TestOfferV2AgentAnswers1(t *testing.T) {
	cc, s := clientAgainst(t, &acp.ConnOptions{OfferV2: true}, func(method string, _ json.RawMessage) string {
		switch method {
		case "initialize":
			return `"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}`
		case "session/new":
			return `"result":{"sessionId":"s1"}`
		}
		return `"error":{"code":-32601,"message":"no"}`
	})
	resp, err := cc.Initialize(ctxFor(t), &acp.InitializeRequest{
		ClientInfo:         &acp.Implementation{Name: "c", Version: "1"},
		ClientCapabilities: &acp.ClientCapabilities{Auth: &acp.AuthCapabilities{Terminal: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cc.ProtocolVersion() != 1 || !resp.AgentCapabilities.LoadSession {
		t.Fatalf("version %d, answer %+v", cc.ProtocolVersion(), resp)
	}
	offer := s.params(0)
	if offer["protocolVersion"] != float64(2) || offer["info"] == nil || offer["clientInfo"] == nil {
		t.Errorf("offer %v lacks v2's info or v1's clientInfo", offer)
	}
	if cc1, _ := offer["clientCapabilities"].(map[string]any); cc1 == nil || cc1["auth"] == nil {
		t.Errorf("offer %v lacks v1's clientCapabilities", offer)
	}
	if c2, _ := offer["capabilities"].(map[string]any); c2 == nil || c2["auth"] == nil {
		t.Errorf("offer %v lacks v2's capabilities", offer)
	}
	if _, err := cc.NewSession(ctxFor(t), &acp.NewSessionRequest{Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if n := s.params(1); n["mcpServers"] == nil {
		t.Errorf("session/new after falling back to v1 is not v1-shaped: %v", n)
	}
}

// An agent that refuses 2 with unsupported-protocol-version naming 1 gets a v1 initialize.
func TestOfferV2AgentRefuses2(t *testing.T) {
	cc, s := clientAgainst(t, &acp.ConnOptions{OfferV2: true}, func(method string, params json.RawMessage) string {
		if strings.Contains(string(params), `"protocolVersion":2`) {
			return `"error":{"code":-32022,"message":"unsupported protocol version","data":{"requested":2,"supported":[1]}}`
		}
		return `"result":{"protocolVersion":1}`
	})
	if _, err := cc.Initialize(ctxFor(t), nil); err != nil {
		t.Fatal(err)
	}
	if cc.ProtocolVersion() != 1 || s.params(1)["protocolVersion"] != float64(1) {
		t.Fatalf("version %d after a second initialize %v", cc.ProtocolVersion(), s.params(1))
	}
}

// The ways negotiation breaks in practice end initialize with an error that says what happened.
func TestNegotiationBreaks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offer  bool
		answer string
		want   string
	}{
		{"answer of 2 to an offer of 1", false, `"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}`, "answered protocol version 2 to a client that asked for 1"},
		{"v1-shaped answer of 2", true, `"result":{"protocolVersion":2,"agentCapabilities":{},"agentInfo":{"name":"a","version":"1"}}`, "v1-shaped result"},
		{"answer of 3", true, `"result":{"protocolVersion":3,"info":{"name":"a","version":"1"}}`, "answered protocol version 3"},
		{"v2-only agent, v1 client", false, `"error":{"code":-32022,"message":"unsupported","data":{"requested":1,"supported":[2]}}`, "speaks only protocol version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, _ := clientAgainst(t, &acp.ConnOptions{OfferV2: tc.offer}, func(string, json.RawMessage) string { return tc.answer })
			_, err := cc.Initialize(ctxFor(t), nil)
			if !errors.Is(err, acp.ErrVersionNegotiation) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrVersionNegotiation saying %q", err, tc.want)
			}
			if cc.ProtocolVersion() != 0 {
				t.Errorf("version %d after a failed negotiation", cc.ProtocolVersion())
			}
		})
	}
}

// A client asking for 2 with a v1-shaped body gets invalid params that say so, and the agent
// stays unnegotiated; asking again properly works.
func TestAgentRefusesV1ShapedV2Request(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ac := acp.NewAgentConn(namedAgent{}, toAgentR, toClientW, nil)
	defer func() { ac.Close(); ac.Wait() }()
	answers := bufio.NewScanner(toClientR)
	ask := func(params string) string {
		t.Helper()
		if _, err := io.WriteString(toAgentW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+params+"}\n"); err != nil {
			t.Fatal(err)
		}
		if !answers.Scan() {
			t.Fatal("no answer")
		}
		return answers.Text()
	}
	got := ask(`{"protocolVersion":2,"clientCapabilities":{"terminal":true},"clientInfo":{"name":"c","version":"1"}}`)
	if !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, "shaped for version 1") {
		t.Errorf("answer %s", got)
	}
	if ac.ProtocolVersion() != 0 {
		t.Errorf("agent negotiated %d", ac.ProtocolVersion())
	}
	got = ask(`{"protocolVersion":2,"info":{"name":"c","version":"1"}}`)
	if !strings.Contains(got, `"protocolVersion":2`) || !strings.Contains(got, `"info":{"name":"named"`) || ac.ProtocolVersion() != 2 {
		t.Errorf("answer %s, version %d", got, ac.ProtocolVersion())
	}
	toAgentW.Close()
}

// routeClient says which of its handlers got each update.
type routeClient struct{ got chan string }

func (c routeClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}
func (c routeClient) SessionUpdate(context.Context, *acp.SessionNotification) error {
	c.got <- "v1"
	return nil
}
func (c routeClient) SessionUpdateV2(context.Context, *acp.V2UpdateSessionNotification) error {
	c.got <- "v2"
	return nil
}

// An update the agent sends right behind its answer of 2 is read as v2: the version takes
// effect where the answer falls, not when Initialize returns.
func TestV2TakesEffectAtTheAnswer(t *testing.T) {
	client := routeClient{got: make(chan string, 1)}
	cc, _ := clientWith(t, client, &acp.ConnOptions{OfferV2: true}, func(r io.Reader, w io.WriteCloser) *scripted {
		return newReactor(t, r, w, func(method, id string, _ json.RawMessage) []string {
			if method != "initialize" {
				return nil
			}
			return []string{
				`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"idle"}}}`,
			}
		})
	})
	if _, err := cc.Initialize(ctxFor(t), nil); err != nil {
		t.Fatal(err)
	}
	if got := <-client.got; got != "v2" {
		t.Errorf("the update went to the %s handler", got)
	}
}

// InitializeAuth negotiates as Initialize does, and reads a v2 agent's auth methods too.
func TestInitializeAuthNegotiates(t *testing.T) {
	cc, _ := v2Pair(t, namedAgent{}, minimalV1Client{}, &acp.ConnOptions{OfferV2: true})
	_, opts, err := cc.InitializeAuth(ctxFor(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cc.ProtocolVersion() != 2 {
		t.Errorf("version %d", cc.ProtocolVersion())
	}
	if len(opts) != 1 || opts[0].ID != "oauth" {
		t.Errorf("auth options %+v", opts)
	}
}
