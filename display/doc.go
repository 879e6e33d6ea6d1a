// Package display shows an agent's commands to the client as terminals,
// live, inside the tool calls of a turn. It is for agents, on top of the
// connection of package acp:
//
//   - [RunCommand] runs a command in the client's own terminal
//     (terminal/create, wait, output, release) as one tool call that
//     embeds the terminal, and reports how it ended in the tool call.
//   - [RunLocalCommand] runs a command in the agent's own terminal runtime
//     (a terminal.Manager, see [LocalTerminals]) and streams its output to
//     the client for display, in the form the client advertised
//     ([ClientForm]): Zed's _meta form, the ACP v2 draft's
//     terminal updates, or text in the tool call for any other client.
//
// For clients it names the wire forms of such display terminals: the _meta
// keys and values of Zed's form ([MetaTerminalInfo], [MetaTerminalOutput],
// [MetaTerminalExit]) and the v2 draft's updates ([TerminalUpdate],
// [TerminalOutputChunk], read from a session update with
// [TerminalUpdateOf] and [TerminalOutputChunkOf]).
//
// A display terminal is only shown: the client has no terminal/* methods
// for it, and does not run or limit the command; the agent does.
//
// The v2 wire types are declared in package acp (as V2TerminalUpdate and
// so on), where the generated decoding lives; the names here are aliases.
package display
