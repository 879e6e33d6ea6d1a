package acp

// Constructors for tool calls that show a terminal. A client displays a
// terminal embedded in a tool call live, and keeps showing its output after
// the terminal is released; the embedding must happen before the release.

// TerminalContent is tool-call content that embeds the terminal id.
func TerminalContent(id TerminalID) ToolCallContent { return &Terminal{TerminalID: id} }

// TextToolCallContent is tool-call content holding plain text.
func TextToolCallContent(text string) ToolCallContent {
	return &Content{Content: &TextContent{Text: text}}
}

// NewTerminalToolCall announces a running command: kind execute, status
// in_progress, the terminal as its content.
func NewTerminalToolCall(id ToolCallID, title string, term TerminalID) *ToolCall {
	return &ToolCall{
		ToolCallID: id,
		Title:      title,
		Kind:       ToolKindExecute,
		Status:     ToolCallStatusInProgress,
		Content:    []ToolCallContent{TerminalContent(term)},
	}
}

// TerminalToolCallUpdate changes a terminal tool call's status. It sends the
// terminal content again, because an update's content replaces the old
// content whole and the terminal must stay visible.
func TerminalToolCallUpdate(id ToolCallID, status ToolCallStatus, term TerminalID) *ToolCallUpdate {
	return &ToolCallUpdate{
		ToolCallID: id,
		Status:     &status,
		Content:    []ToolCallContent{TerminalContent(term)},
	}
}

// Ptr returns a pointer to v: a convenience for the optional fields of the
// protocol types, as in acp.Ptr(uint64(1<<20)).
func Ptr[T any](v T) *T { return &v }
