//go:build !linux

package cgroup

import "time"

// RemoveOwn does nothing where there are no cgroups.
func RemoveOwn(time.Duration) {}
