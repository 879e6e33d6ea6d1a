//go:build !linux

package main

import "testing"

func liveInGroup(t *testing.T, _ int) []int {
	t.Skip("observing a terminal's processes needs Linux's /proc and pidfds")
	return nil
}

func assertGone(t *testing.T, _ int) {
	t.Skip("observing a terminal's processes needs Linux's /proc and pidfds")
}

func assertNoCgroups(testing.TB, int) {} // cgroups are Linux's
