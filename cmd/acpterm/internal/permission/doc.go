// Package permission decides what the agent may do when acpterm must ask:
// the agent's own questions (session/request_permission), each command it
// runs through terminal/create (the terminal runtime's Policy.Decide), and
// each connection to a host that is not on the run's list (the network
// proxy's Asker).
//
// Who answers is the run's Approval: --approve-all allows the agent's
// requests and --deny-all refuses them without asking anyone; otherwise
// the user is asked on the terminal, one key for an answer, by a Prompter,
// and a run without a terminal denies and says so on stderr. An answer of
// "always" allows every later question of the run. The Approver turns each
// answer into the agent's option, the runtime's decision or the proxy's,
// and reports it to the renderer; a cancelled turn answers every question
// pending and later "cancelled" until Reset.
//
// A yes to the agent's own question about a command is carried to that
// command: when the tool call's rawInput names the command exactly, the
// question shows it, and the terminal/create that runs exactly it, in the
// same session and soon after, runs once without a second question
// (grant.go says what counts as the same command). Anything else is asked
// about again.
//
// The Prompter is the one reader of the terminal: the client's line
// editor, its /attach and the lines typed during a turn take their keys
// through it too, so that a key meant for a question never goes elsewhere.
package permission
