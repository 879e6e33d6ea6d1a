// Package mcpexec serves acpterm's terminal runtime as an MCP server: the
// tools a model uses to run commands, with the names, arguments and
// answers of Codex's unified exec, which models are trained on.
//
//   - exec_command {cmd, workdir?, tty?, yield_time_ms?, max_output_tokens?,
//     shell?, login?} runs cmd as a shell line. When it ends within
//     yield_time_ms (default 10 s, clamped to 250 ms..30 s) the answer has
//     its exit code and output; otherwise a session ID, and it runs on.
//   - write_stdin {session_id, chars?, yield_time_ms?, max_output_tokens?}
//     writes chars to the command's stdin (empty chars only polls) and
//     answers with the output since the last answer, and the exit once the
//     command has ended (default wait 250 ms).
//   - list_sessions {} lists the commands still running.
//   - kill_session {session_id} stops one with all it started (SIGTERM,
//     the kill grace, SIGKILL) and answers with its last output and exit.
//
// Answers are text in Codex's format:
//
//	Chunk ID: 3f9a2c
//	Wall time: 0.0123 seconds
//	Process exited with code 0
//	Original token count: 31250
//	Output:
//	…
//
// ("Process running with session ID 7" instead of the exit while the
// command runs; "Original token count" only when output was left out).
// An answer holds at most max_output_tokens (default 10000) of output at
// four bytes a token: the first and the last half of it, with a line
// saying how much lies between. Output is stdout and stderr merged.
// Arguments that are wrong, and commands the policy refuses, get a tool
// error (isError) whose text says what is wrong; an unknown tool is
// -32602.
//
// # Protocol
//
// The server speaks MCP's stdio transport (one JSON-RPC message per line)
// on acpterm's own JSON-RPC engine: initialize (revisions 2025-11-25,
// 2025-06-18, 2025-03-26 and 2024-11-05; any other gets the newest),
// notifications/initialized, ping, tools/list, tools/call,
// notifications/cancelled and, for a tools/call whose _meta has a
// progressToken, notifications/progress as output arrives (at most one
// each 200 ms; progress counts output bytes). The 2026-07-28 revision's
// server/discover is answered -32601, after which clients fall back to
// initialize. A cancelled exec_command kills its command (nobody has its
// session ID); a cancelled write_stdin stops waiting and leaves the
// command running.
//
// # Commands
//
// Commands run on a terminal.Manager of the server's own (Options.Terminal:
// its Policy holds the sandbox, roots and limits), or on the Runtime a
// host shares with the server (Options.Runtime: its own Manager, or a
// *remote.Client, whose commands run on its target, in the sandbox of
// the exec server there). The server asks for what it needs through
// terminal/create's _meta (terminal.MetaStdin, terminal.MetaPTY), so any
// Runtime that honours them serves it alike. Each runs with a pipe as stdin,
// in Options.Cwd unless a workdir names another directory, which must lie
// in the policy's roots. A server keeps at most Options.MaxSessions
// commands (64) until their end is reported. A session is used by one call
// at a time. Output that arrives while nobody asks is buffered up to the
// manager's SubscriberBuffer (1 MiB) and counted beyond it. When the
// client's input ends, the calls already read are answered within
// Options.DrainTimeout (5 s), then every command is killed; so it is when
// Run's ctx ends.
//
// Without tty a command runs with pipes. Unlike Codex's pipe mode (stdin
// /dev/null), stdin is a pipe, so that write_stdin can answer a prompt
// without a PTY; a Ctrl-D (U+0004) in chars closes it after the bytes
// before it, as a terminal's end of input does. With tty (Linux) it runs on
// a pseudo-terminal of 80×24 (terminal.Request.PTY): write_stdin types into
// it, Ctrl-D included, and the answers give the rendered screen's text
// (no escape sequences; a progress bar as its last state), each what the
// screen shows past what the answers gave, or its whole text, said so,
// when it changed above that.
package mcpexec
