//go:build !linux

package sandbox

func runAct([]string) int { return 2 }
