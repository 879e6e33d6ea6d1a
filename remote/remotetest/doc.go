// Package remotetest is the terminal contract that acpterm's exec server
// keeps on any target, as a test helper, the way net/http/httptest serves
// net/http: Contract runs it, one subtest per rule, on a connected
// remote.Client (output, truncation, exit codes and signals by name, kill
// and release, a grandchild holding the pipe, the process tree gone after
// release), and Disconnect checks what a kill -9 of the transport leaves
// behind. The target's processes are seen through a Place, by an
// environment marker (MarkerVar) that the contract's commands carry.
//
// acpterm's own tests run it through sshd on this machine, in podman and
// docker containers (package remote) and in a Kubernetes pod (k8stest);
// the same calls check a target of your own, a real cluster's pod say.
package remotetest
