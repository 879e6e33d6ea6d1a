package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
)

// modelsAgent answers session/new with the draft's models field, as
// gemini-cli does, and session/set_model with {}; it records the models
// it was asked to switch to.
func modelsAgent(t *testing.T, in io.Reader, out io.WriteCloser, asked chan<- string) {
	defer out.Close()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Errorf("agent: %v", err)
			return
		}
		var result string
		switch req.Method {
		case MethodSessionNew:
			result = `{"sessionId":"s1","models":{"availableModels":[{"modelId":"auto","name":"Auto","description":"let it choose"},{"modelId":"pro","name":"Pro"}],"currentModelId":"auto"}}`
		case MethodSessionLoad:
			result = `{"models":"not the draft's shape"}`
		case MethodSessionSetModel:
			var p SetSessionModelRequest
			_ = json.Unmarshal(req.Params, &p)
			asked <- string(p.SessionID) + " " + p.ModelID
			result = `{}`
		default:
			result = `{}`
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
	}
}

// TestSessionModels: the draft's models of a session/new result are kept
// for the session, session/set_model is sent and updates the current one,
// and a models field of another shape is ignored.
func TestSessionModels(t *testing.T) {
	toAgent, agentIn := io.Pipe()
	agentOut, fromAgent := io.Pipe()
	asked := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		modelsAgent(t, toAgent, fromAgent, asked)
	}()
	c := NewClientConn(&fullClient{}, agentOut, agentIn, nil)
	defer func() {
		c.Close()
		<-done
	}()
	ctx := context.Background()
	sess, err := c.NewSession(ctx, &NewSessionRequest{Cwd: "/", MCPServers: []MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if sess.SessionID != "s1" {
		t.Fatalf("session %q", sess.SessionID)
	}
	m := c.SessionModels("s1")
	if m == nil || m.CurrentModelID != "auto" || len(m.AvailableModels) != 2 || m.AvailableModels[1].ModelID != "pro" ||
		m.AvailableModels[0].Description == nil || *m.AvailableModels[0].Description != "let it choose" {
		t.Fatalf("models %+v", m)
	}
	if c.SessionModels("other") != nil {
		t.Error("models for a session the agent never named")
	}
	if err := c.SetSessionModel(ctx, &SetSessionModelRequest{SessionID: "s1", ModelID: "pro"}); err != nil {
		t.Fatal(err)
	}
	if got := <-asked; got != "s1 pro" {
		t.Errorf("the agent was asked %q", got)
	}
	if m := c.SessionModels("s1"); m.CurrentModelID != "pro" {
		t.Errorf("current model %q after set_model", m.CurrentModelID)
	}
	if _, err := c.LoadSession(ctx, &LoadSessionRequest{SessionID: "s2", Cwd: "/", MCPServers: []MCPServer{}}); err != nil {
		t.Fatalf("a models field of another shape failed the call: %v", err)
	}
	if c.SessionModels("s2") != nil {
		t.Error("models kept from a field of another shape")
	}
}
