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

func ExampleDefaultSecrets() {
	s := sandbox.DefaultSecrets("/home/ann")
	for _, p := range s.Hidden[:4] {
		fmt.Println("hidden:", p)
	}
	fmt.Println("readable:", s.Readable[0])
	fmt.Println("redacted:", s.Redacted[0])
	out, removed := sandbox.RedactNpmrc([]byte("registry=https://npm.example/\n//npm.example/:_authToken=npm_abc\n"))
	fmt.Printf("%q, %d line removed\n", out, removed)
	// Output:
	// hidden: /home/ann/.ssh
	// hidden: /home/ann/.aws
	// hidden: /home/ann/.azure
	// hidden: /home/ann/.config/gcloud
	// readable: /home/ann/.ssh/known_hosts
	// redacted: /home/ann/.npmrc
	// "registry=https://npm.example/\n", 1 line removed
}
