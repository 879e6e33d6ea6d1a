package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// ID identifies a call. It keeps the id's JSON text exactly as received (or built), so a
// reply echoes the peer's id byte for byte. The zero ID is "no id": a notification.
type ID struct {
	raw string
}

// Int64ID returns the ID for the JSON number n.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// StringID returns the ID for the JSON string s.
func StringID(s string) ID {
	b, _ := json.Marshal(s) // a string always marshals
	return ID{raw: string(b)}
}

// IsValid reports whether the ID is present.
func (id ID) IsValid() bool { return id.raw != "" }

// String returns the id's JSON text (a number bare, a string quoted), or "" for the zero ID.
func (id ID) String() string { return id.raw }

// MarshalJSON writes the id as received; the zero ID is null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON accepts a JSON string or number, and null as the zero ID.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, ok := parseID(bytes.TrimSpace(b))
	if !ok {
		return errors.New("jsonrpc2: id must be a string, a number or null")
	}
	*id = v
	return nil
}

// parseID reads an id's JSON text; absent (empty) and null give the zero ID.
func parseID(b []byte) (ID, bool) {
	if len(b) == 0 || string(b) == "null" {
		return ID{}, true
	}
	c := b[0]
	if c != '"' && c != '-' && (c < '0' || c > '9') {
		return ID{}, false
	}
	if !json.Valid(b) {
		return ID{}, false
	}
	return ID{raw: string(b)}, true
}

// key is the id's identity for matching a $/cancel_request to a call: string ids are compared by
// value, so "\u0061" and "a" are the same request.
func (id ID) key() string {
	if !strings.HasPrefix(id.raw, `"`) || !strings.Contains(id.raw, `\`) {
		return id.raw
	}
	var s string
	if json.Unmarshal([]byte(id.raw), &s) != nil {
		return id.raw
	}
	return `"` + s + `"`
}
