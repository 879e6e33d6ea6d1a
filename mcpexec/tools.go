package mcpexec

import "encoding/json"

// The tools' names. exec_command and write_stdin have Codex's names and
// meanings, which models are trained on.
const (
	toolExec  = "exec_command"
	toolWrite = "write_stdin"
	toolList  = "list_sessions"
	toolKill  = "kill_session"
)

// tools is what tools/list returns.
func tools() []tool {
	return []tool{
		{
			Name:  toolExec,
			Title: "Run a command",
			Description: "Runs a shell command and returns its output. If the command ends within yield_time_ms, " +
				"the answer has its exit code and output; otherwise it has a session ID while the command runs on: " +
				"call write_stdin with that session_id to send input or (with empty chars) to poll for more output " +
				"and the exit. Output is stdout and stderr merged. The command's stdin stays open for write_stdin " +
				"until it sends Ctrl-D (\\u0004). Commands run in the server's sandbox.",
			InputSchema: json.RawMessage(execSchema),
			Annotations: &toolAnnotations{DestructiveHint: true, OpenWorldHint: true},
		},
		{
			Name:  toolWrite,
			Title: "Write to a running command",
			Description: "Writes chars to the stdin of a command that exec_command left running (session_id), " +
				"then returns the output it wrote within yield_time_ms, and its exit code once it has ended. " +
				"Empty chars only polls. Include a newline to end a line of input; a Ctrl-D (\\u0004) closes stdin " +
				"after what comes before it, as at a terminal.",
			InputSchema: json.RawMessage(writeSchema),
			Annotations: &toolAnnotations{DestructiveHint: true, OpenWorldHint: true},
		},
		{
			Name:        toolList,
			Title:       "List running commands",
			Description: "Lists the sessions of commands that exec_command left running: ID, state, run time, directory and command.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Annotations: &toolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		},
		{
			Name:  toolKill,
			Title: "Stop a running command",
			Description: "Stops the command of a session and everything it started (SIGTERM, then SIGKILL after a grace period) " +
				"and returns its last output and exit.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"session_id":{"type":"integer","description":"The session to stop."}},"required":["session_id"]}`),
			Annotations: &toolAnnotations{DestructiveHint: true, IdempotentHint: true},
		},
	}
}

const execSchema = `{"type":"object","properties":{
"cmd":{"type":"string","description":"Shell command to execute."},
"workdir":{"type":"string","description":"Working directory; relative paths are resolved against the server's directory. Defaults to it."},
"tty":{"type":"boolean","description":"Run on a pseudo-terminal (80x24), for programs that need one (password prompts, progress bars, full-screen programs): the output is the screen's text, and write_stdin types into it."},
"yield_time_ms":{"type":"integer","minimum":0,"description":"How long to wait for output before answering, in milliseconds (default 10000, clamped to 250..30000)."},
"max_output_tokens":{"type":"integer","minimum":1,"description":"Most tokens of output to return (default 10000); the middle of a longer output is left out."},
"shell":{"type":"string","description":"Shell binary to run the command with (default: the server's shell)."},
"login":{"type":"boolean","description":"Run the shell as a login shell (-lc)."}
},"required":["cmd"]}`

const writeSchema = `{"type":"object","properties":{
"session_id":{"type":"integer","description":"Session of the running command, from exec_command's answer."},
"chars":{"type":"string","description":"Bytes to write to its stdin; empty to only poll; a Ctrl-D (\\u0004) closes stdin."},
"yield_time_ms":{"type":"integer","minimum":0,"description":"How long to wait for output, in milliseconds (default 250, clamped to 250..30000)."},
"max_output_tokens":{"type":"integer","minimum":1,"description":"Most tokens of output to return (default 10000)."}
},"required":["session_id"]}`
