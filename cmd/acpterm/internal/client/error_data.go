package client

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// maxErrorData bounds the error data shown: agents put stack traces and
// whole responses there.
const maxErrorData = 300

// errorDataText is an error's data as a suffix for its message
// ("; data: …"), or "" when there is none. Claude's agents explain a
// -32603 only there ({"details":"Query closed before response
// received"}), opencode names the failing service. A string is shown as
// it is, anything else as compact JSON; either is cut to maxErrorData
// bytes and made one safe line.
func errorDataText(data json.RawMessage) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(data, &s) != nil {
		var b bytes.Buffer
		if json.Compact(&b, data) != nil {
			return ""
		}
		s = b.String()
	}
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return "; data: " + textsafe.Line(render.Clip(s, maxErrorData))
}
