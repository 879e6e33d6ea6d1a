// Package interop proves acpterm's wire against code nobody here wrote: the
// official TypeScript SDK, @agentclientprotocol/sdk, pinned at 2.4.0 by
// package-lock.json in this directory.
//
// The package has no API; it is its tests. `go test ./interop` builds the
// acpterm binary, installs the pinned SDK with `npm ci` when node_modules is
// missing, and runs small scripts in ts/ against the Go code:
//
//   - ts/terminal-agent.mjs, an agent that uses the SDK's createTerminal and
//     TerminalHandle through every case of the terminal contract (docs/protocol.md),
//     run by `acpterm run --format json` and, without the CLI, by a Go client
//     around terminal.Manager (terminal_agent_test.go);
//   - ts/scripted-client.mjs, a client with scripted terminal answers that
//     drives `acpterm agent` and prints every message it received
//     (scripted_client_test.go);
//   - ts/sdk-client.mjs and ts/sdk-agent.mjs, the SDK's client and agent
//     against the Go SDK's agent and client: initialize, sessions, streamed
//     updates, permissions, fs, cancellation (sdk_test.go);
//   - ts/v2-agent.mjs and ts/v2-client.mjs, the SDK's ACP v2 agent and
//     client (experimental/v2) against the Go SDK's client and agent over
//     v2 (v2_test.go, v2_agent_test.go); the v1 and v2 exchanges of the
//     SDK's clients are kept as transcripts in acp/testdata/transcripts
//     (transcript_test.go).
//
// Every script also checks each message it receives against the SDK's own
// generated schemas and reports what the SDK would change or drop.
//
// Without node on PATH the tests skip, except under CI=true, where they fail.
package interop
