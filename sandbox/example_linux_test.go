package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/acpterm/acpterm/sandbox"
)

// The host's main calls sandbox.Init first (here TestMain does); then a
// command is wrapped just before it starts.
func ExamplePolicy_Wrap() {
	root, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)

	cmd := exec.Command("/bin/sh", "-c", `echo hi > note && echo hi > "$HOME/note"`)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	p := &sandbox.Policy{
		Mode:     sandbox.WorkspaceWrite,
		Network:  sandbox.AllowNetwork,
		Writable: []string{root},
	}
	applied, err := p.Wrap(cmd)
	if err != nil {
		fmt.Println(err) // ErrNoInit, or what this kernel cannot enforce
		return
	}
	defer applied.Cleanup()
	err = cmd.Run()
	_, statErr := os.Stat(root + "/note")
	fmt.Println("wrote in the workspace:", statErr == nil)
	fmt.Println("wrote outside:", err == nil)
	// Output:
	// wrote in the workspace: true
	// wrote outside: false
}
