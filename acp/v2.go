package acp

import (
	"encoding/json"
	"iter"
)

// ProtocolVersion2 is ACP v2 (in Preview), which a connection speaks when
// both sides agree on it in initialize; see ClientOptions.OfferV2.
const ProtocolVersion2 ProtocolVersion = 2

// StopReasonError is the stop reason v2 adds: the active work ended
// because of a failure (V2IdleStateUpdate.StopError has it).
const StopReasonError StopReason = "error"

// CodeUnsupportedProtocolVersion is v2's error for an initialize whose
// protocolVersion the agent cannot serve; its data is a
// V2UnsupportedProtocolVersionErrorData naming the versions it can.
const CodeUnsupportedProtocolVersion int64 = -32022

// V2Methods lists every method of ACP v2, sorted by name, as Methods does
// for v1. Methods of the same name in both versions have the same constant
// (MethodSessionPrompt) and, where the shape did not change, the same
// types.
func V2Methods() iter.Seq[MethodInfo] {
	return func(yield func(MethodInfo) bool) {
		for _, m := range v2MethodTable {
			if !yield(m) {
				return
			}
		}
	}
}

// V2MethodByName returns the v2 method with the given wire name.
func V2MethodByName(name string) (MethodInfo, bool) {
	for _, m := range v2MethodTable {
		if m.Name == name {
			return m, true
		}
	}
	return MethodInfo{}, false
}

// StopError is the failure an "error" stop reason reports, or nil: the
// schema's ErrorStopReason, which the generated type keeps as JSON since
// its branch shares the "stopReason" member with the others.
func (u *V2IdleStateUpdate) StopError() *Error {
	if len(u.Error) == 0 {
		return nil
	}
	var e Error
	if json.Unmarshal(u.Error, &e) != nil || e.Code == 0 && e.Message == "" {
		return nil
	}
	return &e
}
