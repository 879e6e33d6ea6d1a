// Package agentstart is how acpterm starts an agent, the one way that
// acpterm run, sessions, login and the exec server's --agent share: its
// working directory; npx in a directory of acpterm's own with an npm cache
// that no sandbox of acpterm's writes; and, for a confined agent, its
// profile's writable state and read-only configuration, the secrets it
// may not read, its masked API keys (KeyMask) and its network. Start
// builds the process; the caller starts it and cleans up its sandbox.
package agentstart
