package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
)

// TestGoClientTSAgent: the Go SDK's client (acp.StartAgent) against the
// official SDK's agent, ts/sdk-agent.mjs.
func TestGoClientTSAgent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: TestTSClientGoAgent is the -short interop check")
	}
	requireNode(t)
	ctx := testCtx(t, time.Minute)

	cwd := t.TempDir()
	notes := filepath.Join(cwd, "notes.txt")
	c := newScriptClient(map[string]string{notes: "line one\nline two\nline three\nline four\n"})
	// The agent's "block" turn ignores session/cancel and waits for
	// $/cancel_request, which Prompt sends once PromptCancelWait is over:
	// no need to wait the default 5 s for it. No other turn here is
	// cancelled through Prompt's context.
	conn, err := acp.StartAgent(nodeCmd(ctx, "sdk-agent.mjs"), c, &acp.ConnOptions{Logf: t.Logf, PromptCancelWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	init, err := conn.Initialize(ctx, &acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion1,
		ClientInfo:      &acp.Implementation{Name: "acpterm-interop-go-client", Version: "1.0.0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != 1 || init.AgentInfo == nil || init.AgentInfo.Name != "acpterm-interop-sdk-agent" ||
		init.AgentInfo.Title != nil || init.AgentCapabilities == nil || init.AgentCapabilities.PromptCapabilities == nil ||
		!init.AgentCapabilities.PromptCapabilities.EmbeddedContext {
		t.Errorf("initialize: %s", mustJSON(init))
	}
	sess, err := conn.NewSession(ctx, &acp.NewSessionRequest{Cwd: cwd, MCPServers: []acp.MCPServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Modes != nil {
		t.Errorf("modes: null decoded as %+v", sess.Modes)
	}
	r := &tsAgentRun{ctx: ctx, conn: conn, c: c, sid: sess.SessionID, cwd: cwd, notes: notes}
	t.Run("hello", r.hello)
	t.Run("session_cancel", r.sessionCancel)
	t.Run("cancel_request_from_go", r.cancelRequestFromGo)
	t.Run("cancel_request_from_ts", r.cancelRequestFromTS)
	t.Run("errors", r.errorReplies)
	t.Run("wire", r.wire)

	if err := conn.Close(); err != nil {
		t.Error(err)
	}
	if err := conn.ExitError(); err != nil {
		t.Errorf("the agent exited with %v after stdin closed", err)
	}
}

// tsAgentRun is a session of TestGoClientTSAgent, which its subtests share.
type tsAgentRun struct {
	ctx        context.Context
	conn       *acp.ClientConn
	c          *scriptClient
	sid        acp.SessionID
	cwd, notes string
}

func (r *tsAgentRun) prompt(ctx context.Context, text string) (*acp.PromptResponse, error) {
	return r.conn.Prompt(ctx, &acp.PromptRequest{SessionID: r.sid, Prompt: []acp.ContentBlock{&acp.TextContent{Text: text}}})
}

// lastReport decodes the agent's last message of the turn, its JSON report.
func (r *tsAgentRun) lastReport(t *testing.T) obj {
	t.Helper()
	ups := r.c.takeUpdates()
	var o obj
	if len(ups) == 0 || json.Unmarshal([]byte(textOf(ups[len(ups)-1])), &o) != nil {
		t.Fatalf("no report: %s", mustJSON(ups))
	}
	return o
}

// hello: one turn with a thought, a plan, a tool call and the client
// requests it makes (permission, reads, a write).
func (r *tsAgentRun) hello(t *testing.T) {
	resp, err := r.prompt(r.ctx, "hello")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", resp, err)
	}
	ups := r.c.takeUpdates()
	var kinds []string
	for _, u := range ups {
		kinds = append(kinds, fmt.Sprintf("%T", u))
	}
	want := []string{"*acp.AgentThoughtChunk", "*acp.AgentMessageChunk", "*acp.Plan", "*acp.ToolCall", "*acp.ToolCallUpdate", "*acp.AgentMessageChunk"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("updates: got %q, want %q", kinds, want)
	}
	r.checkHelloUpdates(t, ups)

	// What the TypeScript agent got back from us.
	summary := obj{}
	if err := json.Unmarshal([]byte(textOf(ups[5])), &summary); err != nil {
		t.Fatalf("summary %q: %v", textOf(ups[5]), err)
	}
	t.Logf("agent saw: %s", summary)
	wantJSON(t, summary, "permission.ok.outcome", map[string]any{"outcome": "selected", "optionId": "yes"})
	wantJSON(t, summary, "read.ok.content", "line two\nline three\n")
	wantJSON(t, summary, "readAll.ok.content", "line one\nline two\nline three\nline four\n")
	wantJSON(t, summary, "write.ok", map[string]any{})

	r.checkHelloRequests(t)
}

// checkHelloUpdates checks the fields of the hello turn's updates, in the
// order hello checked their types.
func (r *tsAgentRun) checkHelloUpdates(t *testing.T, ups []acp.SessionUpdate) {
	t.Helper()
	if m := ups[1].(*acp.AgentMessageChunk); m.MessageID != nil {
		t.Errorf("messageId: null decoded as %q", *m.MessageID)
	}
	if p := ups[2].(*acp.Plan); len(p.Entries) != 1 || p.Entries[0].Status != acp.PlanEntryStatusInProgress {
		t.Errorf("plan: %s", mustJSON(p))
	}
	call := ups[3].(*acp.ToolCall)
	if call.ToolCallID != "ts-call-1" || call.Kind != acp.ToolKindRead || call.Status != acp.ToolCallStatusPending ||
		len(call.Locations) != 1 || call.Locations[0].Path != r.notes || call.Locations[0].Line != nil ||
		string(call.RawInput) != mustJSON(map[string]string{"path": r.notes}) {
		t.Errorf("tool_call: %s", mustJSON(call))
	}
	upd := ups[4].(*acp.ToolCallUpdate)
	if upd.Status == nil || *upd.Status != acp.ToolCallStatusCompleted || upd.Title != nil || upd.Kind != nil ||
		len(upd.Content) != 1 || string(upd.RawOutput) != `{"lines":2}` {
		t.Errorf("tool_call_update: %s", mustJSON(upd))
	}
	if content, ok := upd.Content[0].(*acp.Content); !ok || textBlock(content.Content) != "read 2 lines" {
		t.Errorf("tool_call_update content: %s", mustJSON(upd.Content))
	}
}

// checkHelloRequests checks what the agent asked of us in the hello turn.
func (r *tsAgentRun) checkHelloRequests(t *testing.T) {
	t.Helper()
	perms, reads, writes := r.c.requests()
	if len(perms) != 1 {
		t.Fatalf("permission requests: %s", mustJSON(perms))
	}
	p := perms[0]
	if p.ToolCall.ToolCallID != "ts-call-1" || p.ToolCall.Title != nil || p.ToolCall.Content != nil ||
		p.ToolCall.Kind == nil || *p.ToolCall.Kind != acp.ToolKindRead || len(p.Options) != 3 ||
		p.Options[1].Kind != acp.PermissionOptionKindAllowAlways {
		t.Errorf("permission request: %s", mustJSON(p))
	}
	wantReads := []string{
		mustJSON(&acp.ReadTextFileRequest{SessionID: r.sid, Path: r.notes, Line: acp.Ptr(uint32(2)), Limit: acp.Ptr(uint32(2))}),
		mustJSON(&acp.ReadTextFileRequest{SessionID: r.sid, Path: r.notes}),
	}
	if got := []string{mustJSON(reads[0]), mustJSON(reads[1])}; len(reads) != 2 || !slices.Equal(got, wantReads) {
		t.Errorf("reads:\n got %q\nwant %q", got, wantReads)
	}
	if len(writes) != 1 || writes[0].Path != filepath.Join(r.cwd, "out.txt") || writes[0].Content != "written by TS\n" {
		t.Errorf("writes: %s", mustJSON(writes))
	}
}

func (r *tsAgentRun) sessionCancel(t *testing.T) {
	ctx := r.ctx
	done := make(chan *acp.PromptResponse, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := r.prompt(ctx, "wait-for-cancel")
		done <- resp
		errc <- err
	}()
	r.c.waitText(t, ctx, func(s string) bool { return s == "waiting" })
	if err := r.conn.Cancel(ctx, &acp.CancelNotification{SessionID: r.sid}); err != nil {
		t.Fatal(err)
	}
	resp := <-done
	if err := <-errc; err != nil || resp.StopReason != acp.StopReasonCancelled {
		t.Errorf("prompt after session/cancel: %v %v", resp, err)
	}
}

func (r *tsAgentRun) cancelRequestFromGo(t *testing.T) {
	pctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := r.prompt(pctx, "block")
		errc <- err
	}()
	r.c.waitText(t, r.ctx, func(s string) bool { return s == "blocking" })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled prompt returned %v, want context.Canceled", err)
	}
	// The agent's request signal fired, with the SDK's -32800 reason.
	aborted := r.c.waitText(t, r.ctx, func(s string) bool { return strings.HasPrefix(s, `{"aborted"`) })
	var o obj
	_ = json.Unmarshal([]byte(aborted), &o)
	wantJSON(t, o, "aborted.code", -32800)
}

func (r *tsAgentRun) cancelRequestFromTS(t *testing.T) {
	resp, err := r.prompt(r.ctx, "cancel-own-request")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", resp, err)
	}
	// Our handler's ctx was cancelled by the agent's $/cancel_request.
	select {
	case err := <-r.c.withdrawn:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("permission handler ended with %v, want context.Canceled", err)
		}
	case <-r.ctx.Done():
		t.Fatal("the permission handler never ended")
	}
	wantJSON(t, r.lastReport(t), "withdrawn.error.code", -32800)
}

func (r *tsAgentRun) errorReplies(t *testing.T) {
	ctx := r.ctx
	_, err := r.conn.ExtMethod(ctx, "_interop/unknown", map[string]int{"x": 1})
	var e *acp.Error
	if !errors.As(err, &e) || e.Code != acp.CodeMethodNotFound {
		t.Errorf("unknown method: %v, want -32601", err)
	} else {
		t.Logf("unknown method: %d %q data %s", e.Code, e.Message, e.Data)
	}
	_, err = r.conn.Prompt(ctx, &acp.PromptRequest{SessionID: "no-such-session", Prompt: []acp.ContentBlock{&acp.TextContent{Text: "hello"}}})
	if !errors.As(err, &e) || e.Code != acp.CodeResourceNotFound || string(e.Data) != `{"sessionId":"no-such-session"}` {
		t.Errorf("unknown session: %v (data %s), want -32002 with data.sessionId", err, dataOf(err))
	}
}

func (r *tsAgentRun) wire(t *testing.T) {
	if _, err := r.prompt(r.ctx, "wire"); err != nil {
		t.Fatal(err)
	}
	checkWire(t, r.lastReport(t))
}

// scriptClient is a Go client with fixed answers: files from a map, the
// first allow option, and a permission request named "cancel-me" held until
// the agent withdraws it.
type scriptClient struct {
	files     map[string]string
	texts     chan string
	withdrawn chan error

	mu      sync.Mutex
	updates []acp.SessionUpdate
	perms   []*acp.RequestPermissionRequest
	reads   []*acp.ReadTextFileRequest
	writes  []*acp.WriteTextFileRequest
}

func newScriptClient(files map[string]string) *scriptClient {
	return &scriptClient{files: files, texts: make(chan string, 256), withdrawn: make(chan error, 1)}
}

func (c *scriptClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	if s := textOf(n.Update); s != "" {
		select {
		case c.texts <- s:
		default:
		}
	}
	return nil
}

func (c *scriptClient) RequestPermission(ctx context.Context, req *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	if req.ToolCall.ToolCallID == "cancel-me" {
		timer := time.NewTimer(20 * time.Second)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			c.withdrawn <- ctx.Err()
			return nil, ctx.Err()
		case <-timer.C:
			c.withdrawn <- errors.New("not withdrawn within 20s")
			return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
		}
	}
	c.mu.Lock()
	c.perms = append(c.perms, req)
	c.mu.Unlock()
	for _, o := range req.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return &acp.RequestPermissionResponse{Outcome: &acp.SelectedPermissionOutcome{OptionID: o.OptionID}}, nil
		}
	}
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (c *scriptClient) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	c.mu.Lock()
	c.reads = append(c.reads, req)
	c.mu.Unlock()
	text, ok := c.files[req.Path]
	if !ok {
		return nil, fmt.Errorf("%w: %s", acp.ErrResourceNotFound, req.Path)
	}
	lines := strings.SplitAfter(text, "\n")
	from, to := 0, len(lines)
	if req.Line != nil && *req.Line > 0 {
		from = min(int(*req.Line)-1, len(lines))
	}
	if req.Limit != nil {
		to = min(from+int(*req.Limit), len(lines))
	}
	return &acp.ReadTextFileResponse{Content: strings.Join(lines[from:to], "")}, nil
}

func (c *scriptClient) WriteTextFile(ctx context.Context, req *acp.WriteTextFileRequest) (*acp.WriteTextFileResponse, error) {
	c.mu.Lock()
	c.writes = append(c.writes, req)
	c.mu.Unlock()
	return &acp.WriteTextFileResponse{}, nil
}

// takeUpdates returns the updates so far and forgets them.
func (c *scriptClient) takeUpdates() []acp.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	ups := c.updates
	c.updates = nil
	return ups
}

func (c *scriptClient) requests() ([]*acp.RequestPermissionRequest, []*acp.ReadTextFileRequest, []*acp.WriteTextFileRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.perms), slices.Clone(c.reads), slices.Clone(c.writes)
}

// waitText waits for an agent message chunk that match accepts.
func (c *scriptClient) waitText(t *testing.T, ctx context.Context, match func(string) bool) string {
	t.Helper()
	for {
		select {
		case s := <-c.texts:
			if match(s) {
				return s
			}
		case <-ctx.Done():
			t.Fatal("timed out waiting for an agent message")
		}
	}
}

// textOf is the text of an agent message chunk, else "".
func textOf(u acp.SessionUpdate) string {
	if m, ok := u.(*acp.AgentMessageChunk); ok {
		return textBlock(m.Content)
	}
	return ""
}

// textBlock is the text of a text content block, else "".
func textBlock(b acp.ContentBlock) string {
	if t, ok := b.(*acp.TextContent); ok {
		return t.Text
	}
	return ""
}

func dataOf(err error) string {
	var e *acp.Error
	if errors.As(err, &e) {
		return string(e.Data)
	}
	return ""
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
