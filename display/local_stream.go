package display

import (
	"context"
	"encoding/json"

	"github.com/acpterm/acpterm/acp"
)

// The display stream of RunLocalCommand: the session updates that show
// one local command to the client, in the form it understands.

// displayStream sends the updates of one display terminal.
type displayStream struct {
	a    *acp.AgentConn
	sid  acp.SessionID
	tid  acp.TerminalID
	call acp.ToolCallID
	form Form
	// spent counts the encoded bytes of the live updates sent so far.
	spent   int
	stopped bool // the budget is spent; the stream said so
}

// announce sends the v2 terminal_update (for FormTerminalUpdate) and the tool call.
func (s *displayStream) announce(ctx context.Context, req *acp.CreateTerminalRequest, title string) error {
	if title == "" {
		title = commandLine(req)
	}
	call := &acp.ToolCall{ToolCallID: s.call, Title: title, Kind: acp.ToolKindExecute, Status: acp.ToolCallStatusInProgress}
	call.RawInput, _ = json.Marshal(struct {
		Command string   `json:"command"`
		Args    []string `json:"args,omitempty"`
		Cwd     *string  `json:"cwd,omitempty"`
	}{req.Command, req.Args, req.Cwd})
	switch s.form {
	case FormZedMeta:
		info := MetaTerminalInfoValue{TerminalID: s.tid}
		if req.Cwd != nil {
			info.Cwd = *req.Cwd
		}
		call.Meta = metaOf(MetaTerminalInfo, info)
		call.Content = []acp.ToolCallContent{acp.TerminalContent(s.tid)}
	case FormTerminalUpdate:
		cmd := commandLine(req)
		tu := &TerminalUpdate{TerminalID: TerminalID(s.tid), Command: &cmd}
		if req.Cwd != nil {
			tu.Cwd = acp.Ptr(AbsolutePath(*req.Cwd))
		}
		u, err := tu.SessionUpdate()
		if err != nil {
			return err
		}
		if err := s.a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: s.sid, Update: u}); err != nil {
			return err
		}
		call.Content = []acp.ToolCallContent{acp.TerminalContent(s.tid)}
	}
	return s.a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: s.sid, Update: call})
}

// metaOf is a _meta with one member.
func metaOf(key string, v any) acp.Meta {
	b, _ := json.Marshal(v)
	return acp.Meta{key: b}
}

// chunkUpdate is the live update that carries data.
func (s *displayStream) chunkUpdate(data []byte) (acp.SessionUpdate, error) {
	if s.form == FormTerminalUpdate {
		return (&TerminalOutputChunk{TerminalID: TerminalID(s.tid), Data: data}).SessionUpdate()
	}
	return &acp.ToolCallUpdate{ToolCallID: s.call,
		Meta: metaOf(MetaTerminalOutput, MetaTerminalOutputValue{TerminalID: s.tid, Data: string(data)})}, nil
}

// envelope is what the connection adds around a session/update's params.
const envelope = len(`{"jsonrpc":"2.0","method":"session/update","params":}` + "\n")

// wireSize is an upper bound of the bytes u takes on the wire: the
// connection encodes without escaping <, > and &, which json.Marshal does.
func (s *displayStream) wireSize(u acp.SessionUpdate) (int, error) {
	b, err := json.Marshal(&acp.SessionNotification{SessionID: s.sid, Update: u})
	return len(b) + envelope, err
}

// sendChunk sends what buf holds, within the budget. Once the budget is
// spent it sends a last note instead, and nothing after it.
func (s *displayStream) sendChunk(ctx context.Context, buf *streamBuffer) error {
	data := buf.take()
	if s.stopped {
		return nil
	}
	budget := buf.budget - s.spent - stopNoteReserve
	u, size, err := s.fit(data, budget)
	if err != nil {
		return err
	}
	if u == nil {
		// Not even a little fits: say that the live output ends here.
		s.stopped = true
		buf.stop()
		u, size, err = s.fit([]byte(stopNote), buf.budget-s.spent)
		if err != nil || u == nil {
			return err
		}
	}
	s.spent += size
	return s.a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: s.sid, Update: u})
}

// fit is the update carrying data, or its tail, that takes at most budget
// bytes on the wire; nil if no part of it fits with at least a few bytes
// of output.
func (s *displayStream) fit(data []byte, budget int) (acp.SessionUpdate, int, error) {
	for len(data) > 0 {
		u, err := s.chunkUpdate(data)
		if err != nil {
			return nil, 0, err
		}
		size, err := s.wireSize(u)
		if err != nil {
			return nil, 0, err
		}
		if size <= budget {
			return u, size, nil
		}
		over := size - budget
		if over >= len(data) || len(data)-over < minChunk {
			return nil, 0, nil
		}
		data = cutToRune(data[over:], s.form == FormZedMeta)
	}
	return nil, 0, nil
}

// finalUpdate is the tool call's last update, without its text.
func (s *displayStream) finalUpdate(res *CommandResult, status acp.ToolCallStatus) *acp.ToolCallUpdate {
	update := &acp.ToolCallUpdate{ToolCallID: s.call, Status: &status}
	if s.form != FormText {
		update.Content = []acp.ToolCallContent{acp.TerminalContent(s.tid)}
	}
	update.RawOutput = res.rawOutput()
	if s.form == FormZedMeta {
		ex := MetaTerminalExitValue{TerminalID: s.tid, Signal: res.ExitStatus.Signal}
		if res.ExitStatus.ExitCode != nil {
			ex.ExitCode = acp.Ptr(int64(*res.ExitStatus.ExitCode))
		}
		update.Meta = metaOf(MetaTerminalExit, ex)
	}
	return update
}

// sendExit sends the v2 terminal_update with the exit status.
func (s *displayStream) sendExit(ctx context.Context, res *CommandResult) error {
	if s.form != FormTerminalUpdate {
		return nil
	}
	es := &TerminalExitStatus{Signal: res.ExitStatus.Signal}
	if res.ExitStatus.ExitCode != nil {
		es.ExitCode = acp.Ptr(int64(*res.ExitStatus.ExitCode))
	}
	u, err := (&TerminalUpdate{TerminalID: TerminalID(s.tid), ExitStatus: es}).SessionUpdate()
	if err != nil {
		return err
	}
	return s.a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: s.sid, Update: u})
}

// finish sends the exit and the completed tool call with the output's
// tail as text (textLimit < 0: no text).
func (s *displayStream) finish(ctx context.Context, res *CommandResult, textLimit int) error {
	if err := s.sendExit(ctx, res); err != nil {
		return err
	}
	status := acp.ToolCallStatusCompleted
	if !res.Succeeded() {
		status = acp.ToolCallStatusFailed
	}
	update := s.finalUpdate(res, status)
	if textLimit >= 0 {
		update.Content = append(update.Content, acp.TextToolCallContent(outputText(res, textLimit)))
	}
	return s.a.SessionUpdate(ctx, &acp.SessionNotification{SessionID: s.sid, Update: update})
}
