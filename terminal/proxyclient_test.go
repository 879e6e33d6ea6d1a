package terminal_test

import (
	"testing"

	"github.com/acpterm/acpterm/internal/text/textsafe"
	"github.com/acpterm/acpterm/terminal"
)

func TestProxyClientRoundTrip(t *testing.T) {
	for _, info := range []terminal.Info{
		{TerminalID: "term_0123abcd", Command: "curl", Args: []string{"-s", "https://x.example"}},
		{TerminalID: "term_0123abcd", Command: "sh", Args: []string{"-c", "curl x"}},
		{TerminalID: "term_0123abcd", Command: "make test && curl x"},
	} {
		id, line, ok := terminal.SplitProxyClient(terminal.ProxyClient(info))
		want := textsafe.CommandLine(info.Command, info.Args)
		if !ok || id != info.TerminalID || line != want {
			t.Errorf("%+v: got %q %q %v", info, id, line, ok)
		}
	}
	for _, s := range []string{"", "the agent", "nospace", "x term_1 ls"} {
		if _, _, ok := terminal.SplitProxyClient(s); ok {
			t.Errorf("SplitProxyClient(%q) ok", s)
		}
	}
}
