// Package confined tells a turn in which acpterm's sandbox stopped
// everything the agent tried from one in which the agent's commands worked
// or failed on their own. An agent whose commands all fail (its own
// sandbox cannot start inside acpterm's, or they write where the sandbox
// does not let them) often ends its turn normally and says it could not do
// the job; the run would exit 0, and a script would take it for success.
//
// A Watch follows the execute tool calls of a turn, from the session
// updates, and the output and exit of acpterm's terminals they embed, from
// the terminal events. At the turn's end, Failure says whether every one
// of those calls failed with an error that reads as the sandbox's: a
// read-only file system, a sandbox of the agent's own that could not set
// itself up, or a permission denied on a path outside the writable ones or
// hidden by Landlock. It then returns what to tell the user, with the
// flags that widen the sandbox; any call that succeeded, is still running
// or failed otherwise means no verdict, so that a command's own failure is
// never blamed on the sandbox.
//
// Package client feeds a Watch from its handler's session updates and its
// pump of terminal events, resets it at each turn's start, and asks for
// Failure at the turn's end with the agent's sandbox and its commands'.
// A run of one prompt that gets a message exits with status 6
// (exitcode.Confined); an interactive session says it and goes on.
package confined
