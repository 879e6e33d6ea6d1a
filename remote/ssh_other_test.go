//go:build !linux

package remote_test

// stopSSHD: the sshd tests run on Linux only.
func stopSSHD() {}

// execFloor: the floors measured on targets are Linux benchmarks.
func execFloor() {}

// produce: the capture benchmarks that use it run on Linux only.
func produce() {}
