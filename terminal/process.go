package terminal

// The OS side of a terminal. Each platform file provides:
//
//	type proc struct{ … }                 // one started command
//	type isolator struct{ … }             // the manager's no-orphans state
//	func newIsolator(c *config) *isolator
//	func (*isolator) mode() Isolation
//	func (*isolator) start(s *spawnSpec) (*proc, error)
//	func (*isolator) sweep(ps []*proc)    // kill escaped descendants of released terminals
//	func (*isolator) close()
//	func (*proc) pid() int
//	func (*proc) wait() (ExitStatus, error) // blocks until the command's process exited
//	func (*proc) terminate()              // polite stop: SIGTERM to everything
//	func (*proc) kill()                   // SIGKILL to everything reachable cheaply
//	func (*proc) release(logf)            // reap, free OS resources; after sweep
//	func shellCommand(shell []string, line string) []string

import "os"

// spawnSpec is everything needed to start one command.
type spawnSpec struct {
	id     string // terminal ID, names the cgroup
	marker string // value of MarkerEnv in env
	path   string // resolved executable
	argv   []string
	shell  bool // argv is a shell invocation of a line (Windows quotes it itself)
	env    []string
	dir    string
	stdin  *os.File
	stdout *os.File // also the child's stderr
}
