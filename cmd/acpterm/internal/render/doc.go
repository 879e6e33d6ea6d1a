// Package render shows a turn of an ACP session: the text renderer of
// acpterm's --format text, for people, with a live region on a terminal;
// the JSON renderer of --format json, one event a line, for programs; and
// DisplayTerminals, which turns the commands an agent runs itself and
// streams for display (Zed's _meta, JetBrains' deltas, the v2 draft's
// terminal updates) into the terminal events both renderers draw.
//
// A Renderer takes session updates, terminal events (a terminal.Manager's
// subscription) and permission decisions, from any goroutine, until
// Finish:
//
//	r := render.NewText(os.Stdout, &render.TextOptions{Color: true})
//	disp := render.NewDisplayTerminals(r)
//	// each session/update, with its raw params:
//	disp.SessionUpdate(n, raw)
//	// each event of the manager's subscription:
//	disp.OwnTerminal(ev.TerminalID) // when ev.Kind is terminal.EventCreated
//	r.TerminalEvent(ev)
//	// the turn's end:
//	r.Finish(resp.StopReason)
//
// A client asks agents for display terminals with DisplayCapabilities in
// its clientCapabilities._meta.
//
// Everything the agent controls goes through internal/text/textsafe on
// its way out; Style's SGR and the live region's redraw are the only
// escape sequences written.
//
// The package stands below the rest of the CLI: it may import the toolkit
// (acp, display, terminal, sandbox) and internal/, but no other package of
// cmd/acpterm; the client is built on it (TestLayers checks it).
package render
