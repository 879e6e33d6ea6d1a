package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

func init() {
	registerHostile("cfg-gemini-models", geminiModelsAgent)
}

// geminiModelsAgent speaks JSON-RPC line by line, as gemini-cli 0.61 does
// about models: session/new's result carries the draft's "models" (which
// the generated types have no field for) and session/set_model switches.
// The prompt's answer says which models it was asked for.
func geminiModelsAgent() int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var asked []string
	reply := func(id json.RawMessage, result string) {
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			return 1
		}
		switch req.Method {
		case acp.MethodInitialize:
			reply(req.ID, `{"protocolVersion":1,"agentCapabilities":{}}`)
		case acp.MethodSessionNew:
			reply(req.ID, `{"sessionId":"sess_gm","modes":{"availableModes":[{"id":"default","name":"Default"}],"currentModeId":"default"},`+
				`"models":{"availableModels":[{"modelId":"auto","name":"Auto","description":"Let it decide"},{"modelId":"gemini-2.5-pro","name":"gemini-2.5-pro"}],"currentModelId":"auto"}}`)
		case acp.MethodSessionSetModel:
			var p acp.SetSessionModelRequest
			_ = json.Unmarshal(req.Params, &p)
			asked = append(asked, "set_model:"+p.ModelID)
			reply(req.ID, `{}`)
		case acp.MethodSessionPrompt:
			text, _ := json.Marshal("configured: " + strings.Join(asked, ",") + "\n")
			fmt.Printf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_gm","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%s}}}}`+"\n", text)
			reply(req.ID, `{"stopReason":"end_turn"}`)
		default:
			if len(req.ID) > 0 {
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
			}
		}
	}
	return 0
}

// TestSessionConfigDraftModels: an agent that offers its models the way
// gemini-cli does (the draft's "models" and session/set_model) is switched
// by --model before the prompt, its model is shown, and a model it does
// not offer is a usage error listing those it does.
func TestSessionConfigDraftModels(t *testing.T) {
	t.Parallel()
	env := []string{fakeAgentEnv + "=cfg-gemini-models"}
	r := acpterm(t, opts{plain: true, env: env}, "run", "--no-color", "--model", "gemini-2.5-pro", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "model gemini-2.5-pro", "configured: set_model:gemini-2.5-pro\n")
	if i, j := strings.Index(r.stdout, "model gemini-2.5-pro"), strings.Index(r.stdout, "configured:"); i > j {
		t.Fatalf("the model line comes after the turn:\n%s", r.stdout)
	}

	r = acpterm(t, opts{plain: true, env: env}, "run", "--no-color", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "mode default · model auto\n", "configured: \n")

	r = acpterm(t, opts{plain: true, env: env}, "run", "--no-color", "--model", "gpt-9", "-p", "go", "--", testExe(t))
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "--model gpt-9: the agent offers no such model; it offers auto, gemini-2.5-pro")
}
