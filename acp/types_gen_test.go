package acp_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

func typesPtr[T any](v T) *T { return &v }

// TestTypesEncode checks the JSON written for values built in Go: discriminators are added where a
// union is held, never elsewhere; required arrays are never null; zero values that mean something
// are kept.
func TestTypesEncode(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			"union field",
			&acp.SessionNotification{SessionID: "s1", Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: "hi"}}},
			`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`,
		},
		{
			"shared payload type, not a union here",
			&acp.RequestPermissionRequest{
				SessionID: "s1",
				ToolCall:  acp.ToolCallUpdate{ToolCallID: "c1", Status: typesPtr(acp.ToolCallStatusPending)},
				Options:   []acp.PermissionOption{{OptionID: "o1", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}},
			},
			`{"sessionId":"s1","toolCall":{"toolCallId":"c1","status":"pending"},"options":[{"optionId":"o1","name":"Allow","kind":"allow_once"}]}`,
		},
		{
			"value struct, not pointer",
			acp.SessionNotification{SessionID: "s1", Update: &acp.UsageUpdate{Used: 0, Size: 10}},
			`{"sessionId":"s1","update":{"sessionUpdate":"usage_update","used":0,"size":10}}`,
		},
		{
			"zero exit code kept",
			&acp.WaitForTerminalExitResponse{ExitCode: typesPtr(uint32(0))},
			`{"exitCode":0}`,
		},
		{
			"truncated false kept",
			&acp.TerminalOutputResponse{Output: "", Truncated: false},
			`{"output":"","truncated":false}`,
		},
		{
			"required arrays are [] not null; default variant has no tag",
			&acp.NewSessionRequest{Cwd: "/w", MCPServers: []acp.MCPServer{&acp.MCPServerStdio{Name: "fs", Command: "mcp-fs"}}},
			`{"cwd":"/w","mcpServers":[{"name":"fs","command":"mcp-fs","args":[],"env":[]}]}`,
		},
		{
			"nil required array",
			&acp.NewSessionRequest{Cwd: "/w"},
			`{"cwd":"/w","mcpServers":[]}`,
		},
		{
			"empty nullable array is a value",
			&acp.ToolCallUpdate{ToolCallID: "c1", Content: []acp.ToolCallContent{}},
			`{"toolCallId":"c1","content":[]}`,
		},
		{
			"inline union, tagged variant",
			&acp.SetSessionConfigOptionRequest{SessionID: "s1", ConfigID: "think", Value: &acp.SessionConfigBooleanValue{Value: true}},
			`{"sessionId":"s1","configId":"think","type":"boolean","value":true}`,
		},
		{
			"inline union, untagged variant",
			&acp.SetSessionConfigOptionRequest{SessionID: "s1", ConfigID: "model", Value: &acp.SessionConfigSelectValue{Value: "fast"}},
			`{"sessionId":"s1","configId":"model","value":"fast"}`,
		},
		{
			"nested inline unions",
			&acp.CreateElicitationRequest{Message: "Token?", Mode: &acp.ElicitationURLMode{
				ElicitationID: "e1", URL: "https://example.com/login", Scope: &acp.ElicitationSessionScope{SessionID: "s1"},
			}},
			`{"message":"Token?","mode":"url","elicitationId":"e1","url":"https://example.com/login","sessionId":"s1"}`,
		},
		{
			"empty inline variant",
			&acp.CreateElicitationResponse{Action: &acp.ElicitationDeclineAction{}},
			`{"action":"decline"}`,
		},
		{
			"value variants",
			&acp.CreateElicitationResponse{Action: &acp.ElicitationAcceptAction{Content: map[string]acp.ElicitationContentValue{
				"n": acp.ElicitationContentNumber(2), "i": acp.ElicitationContentInteger(2), "s": acp.ElicitationContentStringArray(nil),
			}}},
			`{"action":"accept","content":{"i":2,"n":2.0,"s":[]}}`,
		},
		{
			"unknown variant without Raw",
			&acp.SessionNotification{SessionID: "s1", Update: &acp.UnknownSessionUpdate{Kind: "later"}},
			`{"sessionId":"s1","update":{"sessionUpdate":"later"}}`,
		},
		{
			"request id",
			&acp.CancelRequestNotification{RequestID: acp.StringRequestID("7")},
			`{"requestId":"7"}`,
		},
		{
			"null request id is written",
			&acp.CancelRequestNotification{},
			`{"requestId":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTypesEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nil required union", &acp.SessionNotification{SessionID: "s1"}, "SessionNotification.update: no value"},
		{"nil item", &acp.PromptRequest{SessionID: "s1", Prompt: []acp.ContentBlock{nil}}, "PromptRequest.prompt[0]: no value"},
		{"typed nil", &acp.PromptRequest{Prompt: []acp.ContentBlock{(*acp.TextContent)(nil)}}, "does not encode as a JSON object"},
		{"bad Raw", &acp.PromptRequest{Prompt: []acp.ContentBlock{&acp.UnknownContentBlock{Kind: "x", Raw: json.RawMessage(`[1]`)}}}, "Raw is not a JSON object"},
		{"nil inline union", &acp.SessionConfigOption{ID: "m", Name: "Model"}, "SessionConfigOption.Kind: no value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := json.Marshal(tt.v)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTypesDecode(t *testing.T) {
	var n acp.SessionNotification
	in := `{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"},"messageId":"m1"}}`
	if err := json.Unmarshal([]byte(in), &n); err != nil {
		t.Fatal(err)
	}
	want := &acp.AgentThoughtChunk{Content: &acp.TextContent{Text: "hm"}, MessageID: typesPtr[acp.MessageID]("m1")}
	if !reflect.DeepEqual(n.Update, want) {
		t.Errorf("got %#v, want %#v", n.Update, want)
	}

	// Auth methods without "type", and legacy ones, are agent methods.
	var r acp.InitializeResponse
	in = `{"protocolVersion":1,"authMethods":[{"id":"a","name":"A"},{"id":"b","name":"B","type":"env_var"},` +
		`{"id":"c","name":"C","type":"terminal","args":["--login"]},{"id":"d","name":"D","type":"oauth"}]}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range r.AuthMethods {
		kinds = append(kinds, reflect.TypeOf(m).Elem().Name())
	}
	if got, want := strings.Join(kinds, " "), "AuthMethodAgent AuthMethodAgent AuthMethodTerminal UnknownAuthMethod"; got != want {
		t.Errorf("auth methods decode as %s, want %s", got, want)
	}
}

func TestTypesDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		v    any
		in   string
		want string
	}{
		{"missing required", &acp.TerminalOutputResponse{}, `{"output":"x"}`, `TerminalOutputResponse: missing "truncated"`},
		{"null required", &acp.CreateTerminalRequest{}, `{"sessionId":null,"command":"ls"}`, `CreateTerminalRequest: "sessionId" is null`},
		{"wrong type", &acp.CreateTerminalRequest{}, `{"sessionId":"s","command":"ls","outputByteLimit":-1}`, "CreateTerminalRequest.outputByteLimit"},
		{"not an object", &acp.PromptResponse{}, `[1]`, "want a JSON object, got array"},
		{"no discriminator", &acp.SessionNotification{}, `{"sessionId":"s","update":{"content":{"type":"text","text":"x"}}}`, `SessionUpdate without "sessionUpdate"`},
		{"known variant, bad payload", &acp.SessionNotification{}, `{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}`, `SessionNotification.update: ContentChunk: missing "content"`},
		{"untagged, no match", &acp.PromptRequest{}, `{"sessionId":"s","prompt":[{"type":"resource","resource":{"uri":"file:///a"}}]}`, "matches no form of EmbeddedResourceResource"},
		{"fractional request id", &acp.CancelRequestNotification{}, `{"requestId":1.5}`, "neither an int64"},
		{"missing request id", &acp.CancelRequestNotification{}, `{}`, `missing "requestId"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := json.Unmarshal([]byte(tt.in), tt.v)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTypesNullResult(t *testing.T) {
	// Peers send null for empty results; it decodes like {}.
	var r acp.WriteTextFileResponse
	if err := json.Unmarshal([]byte(`null`), &r); err != nil {
		t.Fatal(err)
	}
}

func TestTypesMetaLenient(t *testing.T) {
	for _, in := range []string{`"x"`, `[1]`, `3`, `{}`, `null`} {
		var r acp.AuthenticateResponse
		if err := json.Unmarshal([]byte(`{"_meta":`+in+`}`), &r); err != nil || r.Meta != nil {
			t.Errorf("_meta %s: got %v, %v; want nil, nil", in, r.Meta, err)
		}
	}
	var r acp.AuthenticateResponse
	if err := json.Unmarshal([]byte(`{"_meta":{"a": [1, 2], "traceparent":"00-x"}}`), &r); err != nil {
		t.Fatal(err)
	}
	if got := string(r.Meta["a"]); got != `[1,2]` {
		t.Errorf(`_meta["a"] = %s, want [1,2]`, got)
	}
}

func TestTypesRequestID(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want acp.RequestID
	}{
		{`null`, acp.RequestID{}},
		{`7`, acp.Int64RequestID(7)},
		{`-9223372036854775808`, acp.Int64RequestID(-9223372036854775808)},
		{`"7"`, acp.StringRequestID("7")},
	} {
		var id acp.RequestID
		if err := json.Unmarshal([]byte(tt.in), &id); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if id != tt.want {
			t.Errorf("%s decodes as %v, want %v", tt.in, id, tt.want)
		}
		if out, _ := json.Marshal(id); string(out) != tt.in {
			t.Errorf("%s encodes as %s", tt.in, out)
		}
	}
	for _, in := range []string{`1.5`, `1e3`, `9223372036854775808`, `true`, `{}`} {
		var id acp.RequestID
		if err := json.Unmarshal([]byte(in), &id); err == nil {
			t.Errorf("%s decodes as %v, want an error", in, id)
		}
	}
	if acp.Int64RequestID(1) == acp.StringRequestID("1") {
		t.Error("integer and string ids compare equal")
	}
}

func TestTypesMethods(t *testing.T) {
	seen := map[string]bool{}
	var names []string
	for m := range acp.Methods() {
		if seen[m.Name] {
			t.Errorf("%s listed twice", m.Name)
		}
		seen[m.Name] = true
		names = append(names, m.Name)
		if m.Request == nil || m.Notification != (m.Response == nil) {
			t.Errorf("%s: Notification %t but Response set: %t", m.Name, m.Notification, m.Response != nil)
		}
		switch m.Side {
		case acp.SideAgent, acp.SideClient, acp.SideProtocol:
		default:
			t.Errorf("%s: side %q", m.Name, m.Side)
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("Methods not sorted: %v", names)
	}
	for _, name := range []string{
		acp.MethodInitialize, acp.MethodSessionPrompt, acp.MethodSessionCancel, acp.MethodSessionUpdate,
		acp.MethodTerminalCreate, acp.MethodTerminalOutput, acp.MethodTerminalWaitForExit, acp.MethodTerminalKill,
		acp.MethodTerminalRelease, acp.MethodFSReadTextFile, acp.MethodFSWriteTextFile, acp.MethodCancelRequest,
		acp.MethodElicitationComplete, acp.MethodSessionRequestPermission,
	} {
		if !seen[name] {
			t.Errorf("%s missing from Methods", name)
		}
		if m, ok := acp.MethodByName(name); !ok || m.Name != name {
			t.Errorf("MethodByName(%q) = %q, %t", name, m.Name, ok)
		}
	}
	if len(names) != 25 {
		t.Errorf("%d methods, want 25", len(names))
	}
	if m, ok := acp.MethodByName("_ext/unknown"); ok {
		t.Errorf("MethodByName of an unknown method = %+v, want none", m)
	}
}
