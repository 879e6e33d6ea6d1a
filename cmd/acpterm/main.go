// Command acpterm runs ACP agents with full terminal support.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "demo" {
		fmt.Fprintln(stdout, "acpterm demo: not built yet (the CLI is still being written)")
		return 0
	}
	fmt.Fprintln(stderr, "usage: acpterm demo")
	return 2
}
