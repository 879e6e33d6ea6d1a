// Package remotetest is the terminal contract of acpterm's exec server,
// written once for every target the tests reach it on: sshd on this
// machine, podman and docker containers (the remote package's tests), a
// Kubernetes pod (k8stest, a module of its own). Contract runs it on a
// connected client, Disconnect checks what kill -9 of the transport
// leaves behind; the target's processes are seen through a Place, by an
// environment marker (MarkerVar) that each test's commands carry.
//
// Unlike the rest of internal/, it stands above the toolkit (it drives a
// remote.Client) and is for tests only: layers_test.go lists it among
// the test helpers, which only test files may import.
package remotetest
