package client

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
)

func TestConfigValue(t *testing.T) {
	model := &acp.SessionConfigOption{ID: "model", Name: "Model", Kind: &acp.SessionConfigSelect{
		CurrentValue: "a",
		Options: acp.SessionConfigSelectGroupList{
			{Group: "free", Name: "Free", Options: []acp.SessionConfigSelectOption{{Value: "a", Name: "Alpha"}}},
			{Group: "paid", Name: "Paid", Options: []acp.SessionConfigSelectOption{{Value: "b", Name: "Beta"}}},
		},
	}}
	v, msg := configValue(model, "--model", "beta")
	if sv, ok := v.(*acp.SessionConfigSelectValue); !ok || sv.Value != "b" || msg != "" {
		t.Fatalf("beta: %#v, %q", v, msg)
	}
	if v, msg := configValue(model, "--model", "gamma"); v != nil || !strings.Contains(msg, "it offers a, b") {
		t.Fatalf("gamma: %#v, %q", v, msg)
	}
	toggle := &acp.SessionConfigOption{ID: "fast", Name: "Fast", Kind: &acp.SessionConfigBoolean{}}
	if v, _ := configValue(toggle, "--set", "TRUE"); v == nil || !v.(*acp.SessionConfigBooleanValue).Value {
		t.Fatalf("boolean: %#v", v)
	}
	if v, msg := configValue(toggle, "--set", "yes"); v != nil || !strings.Contains(msg, "it offers true, false") {
		t.Fatalf("boolean yes: %#v, %q", v, msg)
	}
}

func TestListChoicesBounded(t *testing.T) {
	var cs []choice
	for i := 0; i < 100; i++ {
		cs = append(cs, choice{ID: "m\x1b[2J" + strings.Repeat("x", 200)})
	}
	s := listChoices(cs)
	if strings.Contains(s, "\x1b") || !strings.HasSuffix(s, "… and 60 more") || len(s) > maxListed*100 {
		t.Fatalf("listChoices: %d bytes, %q…", len(s), s[:100])
	}
}

func TestSessionStateInfo(t *testing.T) {
	cat := acp.SessionConfigOptionCategoryModel
	st := sessionState{sid: "s", modes: &acp.SessionModeState{CurrentModeID: "yolo", AvailableModes: []acp.SessionMode{{ID: "yolo", Name: "YOLO"}}},
		options: []acp.SessionConfigOption{{ID: "model", Category: &cat, Kind: &acp.SessionConfigSelect{CurrentValue: "b",
			Options: acp.SessionConfigSelectOptionList{{Value: "b", Name: "Big Pickle"}}}}}}
	in := st.info()
	if in != (render.SessionInfo{SessionID: "s", Mode: "yolo", ModeName: "YOLO", Model: "b", ModelName: "Big Pickle"}) {
		t.Fatalf("info %+v", in)
	}
	if got := sessionLine(in); got != "mode yolo · model b (Big Pickle)" {
		t.Fatalf("session line %q", got)
	}
}

func TestErrorDataText(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{``, ``},
		{`null`, ``},
		{`"plain \u001b[31mred"`, `; data: plain \x1b[31mred`},
		{`{ "details" : "Query closed before response received" }`, `; data: {"details":"Query closed before response received"}`},
	} {
		if got := errorDataText(json.RawMessage(tc.data)); got != tc.want {
			t.Errorf("errorDataText(%s) = %q, want %q", tc.data, got, tc.want)
		}
	}
	long, _ := json.Marshal(strings.Repeat("é", 400))
	if got := errorDataText(long); len(got) > len("; data: ")+maxErrorData+len("…") || !strings.HasSuffix(got, "é…") {
		t.Fatalf("long data: %d bytes: %q", len(got), got)
	}
}

// sessionLine is the line the text renderer shows for in.
func sessionLine(in render.SessionInfo) string {
	var out bytes.Buffer
	render.NewText(&out, nil).(render.SessionRenderer).ShowSession(in)
	return strings.TrimSuffix(out.String(), "\n")
}
