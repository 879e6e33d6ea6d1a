// Package sshtest starts a real OpenSSH sshd on 127.0.0.1 for tests of
// what runs through ssh (the remote package, acpterm run --remote), and
// finds the processes a test left running on that target, which is this
// machine. It is for Linux, with Debian's openssh-server (.ci/run
// installs it); Missing says why a test must skip.
package sshtest
