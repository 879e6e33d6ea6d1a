package terminal

import (
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// ProxyClient is how a command names itself to the proxy of a
// ProxyNetwork sandbox (sandbox.Policy.ProxyClient, sandbox.Cmd
// .ProxyClient), and so in the questions it asks about hosts not on the
// list: its terminal ID, a space, and its command line as acpterm shows
// it (textsafe.CommandLine: a shell line as written, an argv with each
// word quoted). The ID is
// the Manager's ("" before there is one), never the agent's words;
// SplitProxyClient reads it back.
func ProxyClient(info Info) string {
	return string(info.TerminalID) + " " + textsafe.CommandLine(info.Command, info.Args)
}

// SplitProxyClient splits what ProxyClient made into the terminal ID and
// the command line; ok is false for anything else (a connection that
// named no command).
func SplitProxyClient(s string) (id acp.TerminalID, line string, ok bool) {
	before, after, found := strings.Cut(s, " ")
	if !found || !strings.HasPrefix(before, "term_") {
		return "", "", false
	}
	return acp.TerminalID(before), after, true
}
