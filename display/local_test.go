//go:build unix

package display_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
)

// wireClient is a client without terminals that keeps the raw params of
// every session/update, as they came over the wire.
type wireClient struct {
	meta    acp.Meta      // its clientCapabilities._meta
	barrier chan struct{} // receives when "_acpterm/barrier" is handled

	mu      sync.Mutex
	raw     []json.RawMessage
	updates []acp.SessionUpdate
	first   time.Time // when the first live output arrived
}

func (c *wireClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(c.raw, append(json.RawMessage(nil), acp.RawParams(ctx)...))
	c.updates = append(c.updates, n.Update)
	if c.first.IsZero() && bytes.Contains(acp.RawParams(ctx), []byte(`"terminal_output`)) {
		c.first = time.Now()
	}
	return nil
}

func (c *wireClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (c *wireClient) ExtMethod(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, acp.ErrMethodNotFound
}

func (c *wireClient) ExtNotification(_ context.Context, method string, _ json.RawMessage) error {
	if method == "_acpterm/barrier" {
		c.barrier <- struct{}{}
	}
	return nil
}

type idleAgent struct{}

func (idleAgent) Initialize(_ context.Context, req *acp.InitializeRequest) (*acp.InitializeResponse, error) {
	// It runs its commands itself: either version will do.
	return &acp.InitializeResponse{ProtocolVersion: req.ProtocolVersion}, nil
}
func (idleAgent) NewSession(context.Context, *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	return &acp.NewSessionResponse{SessionID: "s"}, nil
}
func (idleAgent) Prompt(context.Context, *acp.PromptRequest) (*acp.PromptResponse, error) {
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
func (idleAgent) Cancel(context.Context, *acp.CancelNotification) error { return nil }

// countingWriter counts the bytes the agent writes to the client.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.w.Write(p)
}

// localSetup connects an agent conn to client, initialized with client's
// _meta, and gives it a terminal runtime of its own.
func localSetup(t testing.TB, client *wireClient) (*acp.AgentConn, display.LocalTerminals, *countingWriter) {
	t.Helper()
	client.barrier = make(chan struct{}, 1)
	return localSetupWith(t, client, client.meta)
}

// localSetupWith is localSetup for any client, which has the capabilities
// _meta meta.
func localSetupWith(t testing.TB, client acp.Client, meta acp.Meta) (*acp.AgentConn, display.LocalTerminals, *countingWriter) {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	wire := &countingWriter{w: toClientW}
	ac := acp.NewAgentConn(idleAgent{}, toAgentR, wire, nil)
	cc := acp.NewClientConn(client, toClientR, toAgentW, nil)
	m := terminal.NewManager(&terminal.Options{KillGrace: 500 * time.Millisecond})
	t.Cleanup(func() {
		m.Close()
		cc.Close()
		ac.Close()
		cc.Wait()
		ac.Wait()
	})
	if _, err := cc.Initialize(context.Background(), &acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersion1,
		ClientCapabilities: &acp.ClientCapabilities{Meta: meta},
	}); err != nil {
		t.Fatal(err)
	}
	return ac, m, wire
}

// settle waits until the client has handled every update sent so far:
// notifications are handled in order.
func settle(t testing.TB, ac *acp.AgentConn, client *wireClient) {
	t.Helper()
	if err := ac.ExtNotification(context.Background(), "_acpterm/barrier", nil); err != nil {
		t.Fatal(err)
	}
	<-client.barrier
}

func capsMeta(key string) acp.Meta { return acp.Meta{key: json.RawMessage("true")} }

func decodeObj(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestRunLocalCommandShapes(t *testing.T) {
	cwd := t.TempDir()
	for _, tc := range []struct {
		name string
		meta acp.Meta
		form display.Form
	}{
		{"meta", capsMeta(display.MetaTerminalOutput), display.FormZedMeta},
		{"v2", acp.Meta{display.MetaTerminalOutput: json.RawMessage("true"), display.MetaTerminalUpdate: json.RawMessage("true")}, display.FormTerminalUpdate},
		{"text", nil, display.FormText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := &wireClient{meta: tc.meta}
			ac, terms, _ := localSetup(t, client)
			if got := display.ClientForm(ac.ClientCapabilities()); got != tc.form {
				t.Fatalf("ClientForm = %v, want %v", got, tc.form)
			}
			res, err := display.RunLocalCommand(context.Background(), ac, terms, &acp.CreateTerminalRequest{
				SessionID: "s", Command: "sh", Args: []string{"-c", "printf 'a\\n'; printf 'héllo\\n' >&2; exit 3"}, Cwd: &cwd,
			}, &display.LocalCommandOptions{CommandOptions: display.CommandOptions{ToolCallID: "call_1", Title: "demo"}})
			if err != nil {
				t.Fatal(err)
			}
			settle(t, ac, client)
			if res.ExitStatus.ExitCode == nil || *res.ExitStatus.ExitCode != 3 || res.Output != "a\nhéllo\n" {
				t.Fatalf("result %+v", res)
			}
			tid := string(res.TerminalID)
			client.mu.Lock()
			raws := client.raw
			client.mu.Unlock()
			var updates []map[string]any
			for _, r := range raws {
				u := decodeObj(t, r)["update"].(map[string]any)
				updates = append(updates, u)
			}
			anchor := `[{"terminalId":"` + tid + `","type":"terminal"}]`
			text := "```\na\nhéllo\n```\nexit 3"
			var live string
			last := updates[len(updates)-1]
			switch tc.form {
			case display.FormZedMeta:
				live = checkZedMetaShapes(t, updates, tid, cwd, anchor)
			case display.FormTerminalUpdate:
				live = checkTerminalUpdateShapes(t, client, updates, tid, cwd, anchor)
			case display.FormText:
				if first := updates[0]; len(updates) != 2 || first["content"] != nil || first["_meta"] != nil {
					t.Errorf("updates %s", jsonOf(updates))
				}
			}
			if tc.form != display.FormText && live != "a\nhéllo\n" {
				t.Errorf("live output %q", live)
			}
			checkFinalShape(t, last, tc.form, anchor, text)
		})
	}
}

// checkFinalShape checks the final tool_call_update of
// TestRunLocalCommandShapes: failed, the exit in rawOutput, then the
// terminal anchor (but in the text form) and the text.
func checkFinalShape(t *testing.T, last map[string]any, form display.Form, anchor, text string) {
	t.Helper()
	if last["sessionUpdate"] != "tool_call_update" || last["status"] != "failed" ||
		jsonOf(last["rawOutput"]) != `{"exitCode":3,"signal":null,"truncated":false}` {
		t.Errorf("last update %s", jsonOf(last))
	}
	wantContent := `[{"content":{"text":` + jsonOf(text) + `,"type":"text"},"type":"content"}]`
	if form != display.FormText {
		wantContent = anchor[:len(anchor)-1] + "," + wantContent[1:]
	}
	if jsonOf(last["content"]) != wantContent {
		t.Errorf("last content %s\nwant %s", jsonOf(last["content"]), wantContent)
	}
}

// checkZedMetaShapes checks the updates of TestRunLocalCommandShapes in
// Zed's _meta form and returns the live output they carried.
func checkZedMetaShapes(t *testing.T, updates []map[string]any, tid, cwd, anchor string) string {
	t.Helper()
	var live strings.Builder
	first, last := updates[0], updates[len(updates)-1]
	if first["sessionUpdate"] != "tool_call" || first["kind"] != "execute" || first["status"] != "in_progress" ||
		jsonOf(first["content"]) != anchor ||
		jsonOf(first["_meta"]) != `{"terminal_info":{"cwd":"`+cwd+`","terminal_id":"`+tid+`"}}` {
		t.Errorf("tool_call %s", jsonOf(first))
	}
	for _, u := range updates[1 : len(updates)-1] {
		out := u["_meta"].(map[string]any)["terminal_output"].(map[string]any)
		if u["sessionUpdate"] != "tool_call_update" || u["toolCallId"] != "call_1" || out["terminal_id"] != tid || len(u) != 3 {
			t.Errorf("live update %s", jsonOf(u))
		}
		live.WriteString(out["data"].(string))
	}
	if jsonOf(last["_meta"]) != `{"terminal_exit":{"exit_code":3,"signal":null,"terminal_id":"`+tid+`"}}` {
		t.Errorf("last _meta %s", jsonOf(last["_meta"]))
	}
	return live.String()
}

// checkTerminalUpdateShapes checks the updates of
// TestRunLocalCommandShapes in the v2 draft's form, and that the client
// decodes them (checkDecodedUpdates); it returns the live output they
// carried.
func checkTerminalUpdateShapes(t *testing.T, client *wireClient, updates []map[string]any, tid, cwd, anchor string) string {
	t.Helper()
	var live strings.Builder
	first := updates[0]
	cmd, _ := first["command"].(string)
	delete(first, "command")
	if !strings.HasPrefix(cmd, "sh -c ") || jsonOf(first) != `{"cwd":"`+cwd+`","sessionUpdate":"terminal_update","terminalId":"`+tid+`"}` {
		t.Errorf("first terminal_update %s", jsonOf(first))
	}
	if updates[1]["sessionUpdate"] != "tool_call" || jsonOf(updates[1]["content"]) != anchor || updates[1]["_meta"] != nil {
		t.Errorf("tool_call %s", jsonOf(updates[1]))
	}
	for _, u := range updates[2 : len(updates)-2] {
		if u["sessionUpdate"] != "terminal_output_chunk" || u["terminalId"] != tid || len(u) != 3 {
			t.Errorf("chunk %s", jsonOf(u))
		}
		b, err := base64.StdEncoding.DecodeString(u["data"].(string))
		if err != nil {
			t.Fatal(err)
		}
		live.Write(b)
	}
	if exit := updates[len(updates)-2]; jsonOf(exit) != `{"exitStatus":{"exitCode":3},"sessionUpdate":"terminal_update","terminalId":"`+tid+`"}` {
		t.Errorf("exit terminal_update %s", jsonOf(exit))
	}
	checkDecodedUpdates(t, client, tid, cwd, cmd)
	return live.String()
}

// checkDecodedUpdates checks that the client decodes the v2 updates of
// TestRunLocalCommandShapes with the generated types.
func checkDecodedUpdates(t *testing.T, client *wireClient, tid, cwd, cmd string) {
	t.Helper()
	client.mu.Lock()
	decoded := client.updates
	client.mu.Unlock()
	if tu, err := display.TerminalUpdateOf(decoded[0]); err != nil || tu == nil || tu.TerminalID != display.TerminalID(tid) || *tu.Command != cmd || string(*tu.Cwd) != cwd {
		t.Errorf("TerminalUpdateOf = %+v, %v", tu, err)
	}
	if c, err := display.TerminalOutputChunkOf(decoded[2]); err != nil || c == nil || len(c.Data) == 0 {
		t.Errorf("TerminalOutputChunkOf = %+v, %v", c, err)
	}
}

// TestRunLocalCommandFlood runs a command that writes 200 MiB as fast as it
// can: the wire carries at most the output limit plus the announcement and
// the final update, and the agent's heap stays far below the flood.
func TestRunLocalCommandFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MiB")
	}
	const limit = 256 << 10
	for _, form := range []display.Form{display.FormZedMeta, display.FormTerminalUpdate} {
		t.Run(form.String(), func(t *testing.T) {
			client := &wireClient{}
			ac, terms, wire := localSetup(t, client)
			var peak atomic.Uint64
			stop := watchHeap(&peak)
			// NUL bytes: six bytes each as JSON text, the worst case of the
			// _meta form's escaping.
			res, err := display.RunLocalCommand(context.Background(), ac, terms, &acp.CreateTerminalRequest{
				SessionID: "s", Command: "head -c 209715200 /dev/zero", Cwd: acp.Ptr(t.TempDir()),
				OutputByteLimit: acp.Ptr(uint64(limit)),
			}, &display.LocalCommandOptions{Form: form})
			stop()
			if err != nil {
				t.Fatal(err)
			}
			settle(t, ac, client)
			if !res.Succeeded() || !res.Truncated || len(res.Output) != limit {
				t.Fatalf("result: %s, truncated %v, %d bytes", res.Status(), res.Truncated, len(res.Output))
			}
			// The final text is at most DefaultOutputText bytes, six bytes
			// each as JSON: that and a few KiB of ids and fields.
			bound := int64(limit + 6*display.DefaultOutputText + 4<<10)
			t.Logf("%v: %d bytes on the wire (bound %d), peak heap %d MiB", form, wire.n.Load(), bound, peak.Load()>>20)
			if n := wire.n.Load(); n > bound {
				t.Errorf("%d bytes on the wire, more than %d", n, bound)
			}
			if p := peak.Load(); p > 64<<20 {
				t.Errorf("peak heap %d MiB", p>>20)
			}
			client.mu.Lock()
			var all []byte
			for _, r := range client.raw {
				all = append(all, r...)
			}
			client.mu.Unlock()
			if form == display.FormZedMeta && !bytes.Contains(all, []byte("live output stopped")) {
				t.Error("the stream did not say that it stopped")
			}
		})
	}
}

// watchHeap samples the growth of the live heap into peak until the
// returned func is called. It collects first, so that what earlier tests
// left for the collector does not count.
func watchHeap(peak *atomic.Uint64) func() {
	runtime.GC()
	base := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(base)
	floor := base[0].Value.Uint64()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		// The live heap as of the last GC: what the agent holds, not the
		// garbage of output already passed on.
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > floor && v-floor > peak.Load() {
				peak.Store(v - floor)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestRunLocalCommandRate checks the update rate: a command that writes a
// line every few milliseconds for a while gets at most one live update per
// interval after the first, and every byte arrives in order.
func TestRunLocalCommandRate(t *testing.T) {
	client := &wireClient{}
	ac, terms, _ := localSetup(t, client)
	start := time.Now()
	res, err := display.RunLocalCommand(context.Background(), ac, terms, &acp.CreateTerminalRequest{
		SessionID: "s", Command: "i=0; while [ $i -lt 100 ]; do echo line $i; i=$((i+1)); sleep 0.005; done", Cwd: acp.Ptr(t.TempDir()),
	}, &display.LocalCommandOptions{Form: display.FormZedMeta, UpdatesPerSecond: 20})
	if err != nil || !res.Succeeded() {
		t.Fatal(res, err)
	}
	settle(t, ac, client)
	elapsed := time.Since(start)
	client.mu.Lock()
	defer client.mu.Unlock()
	var live strings.Builder
	n := 0
	for _, u := range client.updates {
		if tu, ok := u.(*acp.ToolCallUpdate); ok && tu.Meta[display.MetaTerminalOutput] != nil {
			var v display.MetaTerminalOutputValue
			if err := json.Unmarshal(tu.Meta[display.MetaTerminalOutput], &v); err != nil {
				t.Fatal(err)
			}
			live.WriteString(v.Data)
			n++
		}
	}
	if max := int(elapsed/(50*time.Millisecond)) + 2; n > max {
		t.Errorf("%d live updates in %v, more than %d", n, elapsed, max)
	}
	var want strings.Builder
	for i := range 100 {
		want.WriteString("line " + itoa(i) + "\n")
	}
	if live.String() != want.String() {
		t.Errorf("live output %q", live.String())
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
