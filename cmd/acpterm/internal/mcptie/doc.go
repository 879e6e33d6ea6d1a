// Package mcptie shows each command of the MCP server acpterm offers the
// agent under the agent's tool call that ran it. An agent's exec_command
// reaches acpterm over MCP, not terminal/create, so the agent never embeds
// its terminal in a tool call, and the command would be shown on its own,
// apart from the call the agent reports for it.
//
// Claude Code names, in each tools/call's _meta, the tool use that made
// it (claudecode/toolUseId), which is the toolCallId of the ACP tool_call
// claude-agent-acp reports for it; Codex names its callId. The mcpexec
// server passes that on as an mcpexec.ToolCallHint, and Ties.Hint ties the
// command's terminal to that tool call: it sends the renderer a second
// terminal.EventCreated whose terminal.Info.ToolCall names the call, as if
// the agent had embedded the terminal itself. Agents that name no ID
// (opencode, Qwen Code, Gemini CLI) are matched by the arguments instead:
// a terminal is tied to the one running tool call that names the offered
// exec_command and whose rawInput equals the tools/call's arguments
// (Gemini CLI's call is known only from its permission request, whose
// text is the arguments' JSON).
//
// The ID and the arguments are the agent's word. They tie a terminal only
// to a tool call that the agent reported in the run's own session (or
// asked about, and was allowed) and that is still running when the hint
// or the tool call comes (whichever comes second), one terminal a call;
// anything else leaves the terminal on its own, as without a hint. The
// renderer shows a tied terminal that outlives its tool call on its own
// again, so a hint cannot hide a command.
//
// Package client makes one Ties a run, and feeds it the terminal events
// of its pump (TerminalEvent), the session updates the renderer has shown
// (Update) and the agent's permission requests (Permission); the offered
// server's hints go to Hint. The server names the terminal sessions of
// its connections with SessionPrefix, and only their terminals are tied.
package mcptie
