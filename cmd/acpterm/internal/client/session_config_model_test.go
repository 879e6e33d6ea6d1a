package client

import (
	"encoding/json"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// TestModelLineComposite: qwen-code 0.24.4 names its models by internal
// composite keys; the model line shows the model's name, not
// "$runtime|openai|mock-model(openai) (mock-model)". (The other forms of
// IDs are render's TestSessionLine.)
func TestModelLineComposite(t *testing.T) {
	// The models of qwen's session/new answer, as recorded.
	const qwen = `{"currentModelId":"$runtime|openai|mock-model(openai)","availableModels":[{"modelId":"$runtime|openai|mock-model(openai)","name":"mock-model","description":"mock-model (openai)"}]}`
	var models acp.SessionModelState
	if err := json.Unmarshal([]byte(qwen), &models); err != nil {
		t.Fatal(err)
	}
	st := &sessionState{sid: "s", models: &models}
	if got, want := sessionLine(st.info()), "model mock-model"; got != want {
		t.Errorf("session line %q, want %q", got, want)
	}
}
