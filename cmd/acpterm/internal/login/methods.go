package login

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// This file decides which advertised authentication method to use and
// what to tell the user when none worked. The calls themselves are in
// session.go (acpterm run) and command.go (acpterm login).

// WithCapabilities adds to caps what acpterm offers for
// authentication: it can run a terminal login (acpterm login), in the
// standard form and the legacy one, so agents may advertise one.
func WithCapabilities(caps *acp.ClientCapabilities) *acp.ClientCapabilities {
	caps.Auth = &acp.AuthCapabilities{Terminal: true}
	if caps.Meta == nil {
		caps.Meta = acp.Meta{}
	}
	caps.Meta[acp.MetaTerminalAuth] = json.RawMessage("true")
	return caps
}

// lookupFunc is os.LookupEnv, or a map in tests.
type lookupFunc func(name string) (string, bool)

// authenticatable reports whether o is used through authenticate.
func authenticatable(o *acp.AuthOption) bool {
	return o.Kind == acp.AuthKindAgent || o.Kind == acp.AuthKindEnvVar
}

// missingVars lists the required variables of an env_var method that are
// unset or empty.
func missingVars(o *acp.AuthOption, lookup lookupFunc) []string {
	var missing []string
	for _, v := range o.Vars {
		if val, ok := lookup(v.Name); (!ok || val == "") && !v.Optional {
			missing = append(missing, v.Name)
		}
	}
	return missing
}

// varsSet reports whether o is an env_var method whose required variables
// are all set, and at least one of its variables is: setting them is how a
// user says "use this one".
func varsSet(o *acp.AuthOption, lookup lookupFunc) bool {
	if o.Kind != acp.AuthKindEnvVar || len(missingVars(o, lookup)) > 0 {
		return false
	}
	for _, v := range o.Vars {
		if val, ok := lookup(v.Name); ok && val != "" {
			return true
		}
	}
	return false
}

// autoAuthMethod returns the env_var method whose variables are set, when
// exactly one is; n is how many are. With two (codex's CODEX_API_KEY and
// OPENAI_API_KEY both set) acpterm does not guess.
func autoAuthMethod(opts []acp.AuthOption, lookup lookupFunc) (o *acp.AuthOption, n int) {
	for i := range opts {
		if varsSet(&opts[i], lookup) {
			o, n = &opts[i], n+1
		}
	}
	if n != 1 {
		return nil, n
	}
	return o, 1
}

// findAuthMethod returns the advertised method with the given ID.
func findAuthMethod(opts []acp.AuthOption, id string) *acp.AuthOption {
	for i := range opts {
		if string(opts[i].ID) == id {
			return &opts[i]
		}
	}
	return nil
}

// authIDs lists the methods' IDs, quoted for a message.
func authIDs(opts []acp.AuthOption) string {
	ids := make([]string, len(opts))
	for i, o := range opts {
		ids[i] = textsafe.Quote(string(o.ID))
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// nextStep is the command that sets up o, for agent run as agent.
func nextStep(agent []string, o *acp.AuthOption) string {
	id := textsafe.Quote(string(o.ID))
	switch o.Kind {
	case acp.AuthKindTerminal:
		return "acpterm login --method " + id + " -- " + textsafe.QuoteArgs(agent)
	case acp.AuthKindEnvVar:
		var sets []string
		for _, v := range o.Vars {
			if !v.Optional {
				sets = append(sets, textsafe.Quote(v.Name)+"=…")
			}
		}
		if len(sets) == 0 && len(o.Vars) > 0 {
			sets = append(sets, textsafe.Quote(o.Vars[0].Name)+"=…")
		}
		return "export " + strings.Join(sets, " ") + "   (acpterm then uses it by itself, or pass --auth " + id + ")"
	case acp.AuthKindAgent:
		return "acpterm run --auth " + id + " [FLAGS] -- " + textsafe.QuoteArgs(agent)
	}
	return "(acpterm cannot use methods of type " + textsafe.Quote(string(o.Kind)) + ")"
}

// describeAuth is one method for a list: name, ID, description and the
// variables of an env_var method, all agent text, sanitized.
func describeAuth(o *acp.AuthOption) string {
	var b strings.Builder
	b.WriteString(textsafe.Line(o.Name))
	if o.Name != string(o.ID) {
		fmt.Fprintf(&b, " [%s]", textsafe.Line(string(o.ID)))
	}
	if o.Kind == acp.AuthKindTerminal {
		b.WriteString(", a terminal login")
	}
	if o.Description != "" {
		b.WriteString(": " + textsafe.Line(o.Description))
	}
	if len(o.Vars) > 0 {
		names := make([]string, len(o.Vars))
		for i, v := range o.Vars {
			names[i] = textsafe.Line(v.Name)
			if v.Optional {
				names[i] += " (optional)"
			}
		}
		b.WriteString(" (variables: " + strings.Join(names, ", ") + ")")
	}
	if o.Link != "" {
		b.WriteString(" <" + textsafe.Line(o.Link) + ">")
	}
	return b.String()
}

// authHelp is what acpterm shows when the agent still wants
// authentication: each method and the command that sets it up. Every line
// is safe to print.
func authHelp(agent []string, opts []acp.AuthOption) []string {
	if len(opts) == 0 {
		return []string{"The agent advertised no authentication methods: log in with its own tools (see its documentation)."}
	}
	lines := []string{"The agent offers these ways to log in; run one of the commands, then run again:"}
	for i := range opts {
		lines = append(lines, "  "+describeAuth(&opts[i]), "      "+nextStep(agent, &opts[i]))
	}
	return lines
}

// maxAuthData bounds the bytes of an error's data shown.
const maxAuthData = 300

// authErrorText describes a failed call to authenticate, with the error's
// data (codex-acp says which variable is missing only there), bounded and
// sanitized.
func authErrorText(err error) string {
	var ae *acp.Error
	if !errors.As(err, &ae) {
		return textsafe.Line(err.Error())
	}
	s := fmt.Sprintf("%s (code %d)", textsafe.Line(ae.Message), ae.Code)
	if d := strings.TrimSpace(string(ae.Data)); d != "" && d != "null" {
		var str string
		if json.Unmarshal(ae.Data, &str) == nil {
			d = str
		}
		d = render.Clip(d, maxAuthData)
		s += ": " + textsafe.Line(d)
	}
	return s
}
