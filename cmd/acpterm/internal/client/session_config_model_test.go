package client

import (
	"encoding/json"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// TestModelLineComposite: qwen-code 0.24.4 names its models by internal
// composite keys; the model line shows the model's name, not
// "$runtime|openai|mock-model(openai) (mock-model)". Plain IDs are shown
// as before, and a composite ID with no name by its last part.
func TestModelLineComposite(t *testing.T) {
	// The models of qwen's session/new answer, as recorded.
	const qwen = `{"currentModelId":"$runtime|openai|mock-model(openai)","availableModels":[{"modelId":"$runtime|openai|mock-model(openai)","name":"mock-model","description":"mock-model (openai)"}]}`
	var models acp.SessionModelState
	if err := json.Unmarshal([]byte(qwen), &models); err != nil {
		t.Fatal(err)
	}
	st := &sessionState{sid: "s", models: &models}
	for _, tc := range []struct {
		in   SessionInfo
		want string
	}{
		{st.info(), "model mock-model"},
		{SessionInfo{Model: "$runtime|openai|gpt-x"}, "model gpt-x"},
		{SessionInfo{Model: "a|b|\x1b[31m"}, `model \x1b[31m`},
		{SessionInfo{Model: "opencode/grok-code", ModelName: "Grok Code"}, "model opencode/grok-code (Grok Code)"},
		{SessionInfo{Model: "|||"}, "model |||"},
	} {
		if got := sessionLine(tc.in); got != tc.want {
			t.Errorf("sessionLine(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
