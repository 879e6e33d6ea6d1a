package acp

import "fmt"

// String says in a few words how a command ended: "exit 0", "exit 3",
// "killed by SIGTERM", or "no exit status" when the client reported none.
// A signal wins over an exit code, since some clients report a signalled
// command with exit code 1 as well. It is the one wording of an exit
// status in what acpterm prints.
func (s TerminalExitStatus) String() string {
	switch {
	case s.Signal != nil:
		return "killed by " + *s.Signal
	case s.ExitCode != nil:
		return fmt.Sprintf("exit %d", *s.ExitCode)
	}
	return "no exit status"
}
