//go:build race

package main

// The binary under test is built with -race too, so that the end-to-end
// runs look for data races in the real program.
func init() { raceEnabled = true }
