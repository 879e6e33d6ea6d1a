package client

import (
	"fmt"

	"github.com/acpterm/acpterm/acp"
)

// Protocol is the ACP version a run asks the agent for (--protocol).
type Protocol int

const (
	// ProtocolV1 offers version 1 only: acpterm serves the agent's
	// terminals (terminal/*) and files (fs/*).
	ProtocolV1 Protocol = iota
	// ProtocolAuto offers 2 and goes on in 1 when the agent answers 1.
	ProtocolAuto
	// ProtocolV2 requires 2: an agent that answers 1 ends the run.
	ProtocolV2
)

// DefaultProtocol is --protocol's default: auto, v2 with an agent that
// answers 2 and v1 with one that answers 1. An agent that runs its
// commands in acpterm's terminals answers 1 (v2 has no client terminals:
// the acp SDK's agents do, when they would use them, as acpterm's shell
// agent does); claude-agent-acp and codex-acp answer 2 and run their
// commands themselves over either version.
const DefaultProtocol = ProtocolAuto

// ParseProtocol reads --protocol's value: auto, 1 or 2.
func ParseProtocol(s string) (Protocol, error) {
	switch s {
	case "1":
		return ProtocolV1, nil
	case "auto":
		return ProtocolAuto, nil
	case "2":
		return ProtocolV2, nil
	}
	return 0, fmt.Errorf("--protocol must be auto, 1 or 2, not %q", s)
}

// String is the flag's word for p.
func (p Protocol) String() string {
	switch p {
	case ProtocolAuto:
		return "auto"
	case ProtocolV2:
		return "2"
	}
	return "1"
}

// offersV2 reports whether initialize asks for version 2.
func (p Protocol) offersV2() bool { return p != ProtocolV1 }

// checkVersion is the error of an agent that answered a version p does
// not accept, or "".
func (p Protocol) checkVersion(v acp.ProtocolVersion) string {
	switch {
	case v == acp.ProtocolVersion2 && p.offersV2(), v == acp.ProtocolVersion1 && p != ProtocolV2:
		return ""
	case v == acp.ProtocolVersion1:
		return "the agent answered ACP protocol version 1, and --protocol 2 requires version 2 (--protocol auto accepts 1)"
	}
	return fmt.Sprintf("the agent speaks ACP protocol version %d; acpterm asked for %s", v, p.asked())
}

// asked words the versions initialize asked for.
func (p Protocol) asked() string {
	if p.offersV2() {
		return "version 2 (or 1)"
	}
	return "version 1"
}
