package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// `acpterm agent < requests.jsonl` answers every request in the file: the
// end of its stdin is not the end of its work (acp.ConnOptions.DrainTimeout).
func TestAgentAnswersRequestsAfterEndOfInput(t *testing.T) {
	t.Parallel()
	requests := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"unknown","prompt":[]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`,
	}, "\n") + "\n"
	r := acpterm(t, opts{stdin: requests, plain: true}, "agent")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	type answer struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	got := map[int]answer{}
	for line := range strings.SplitSeq(strings.TrimSpace(r.stdout), "\n") {
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("not a JSON-RPC message: %q: %v", line, err)
		}
		got[a.ID] = a
	}
	var ids []int
	for id := range got {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("answered ids %v, want 1 to 5\nstdout:\n%s\nstderr:\n%s", ids, r.stdout, r.stderr)
	}
	for id, wantCode := range map[int]int64{1: 0, 2: 0, 3: -32602, 4: -32602, 5: -32601} {
		a := got[id]
		switch {
		case wantCode == 0 && (a.Error != nil || len(a.Result) == 0):
			t.Errorf("id %d: want a result, got %+v", id, a)
		case wantCode != 0 && (a.Error == nil || a.Error.Code != wantCode):
			t.Errorf("id %d: want error %d, got %+v", id, wantCode, a)
		}
	}
}
