// Package k8stest runs acpterm's remote terminals in a Kubernetes pod,
// reached through `kubectl exec -i` and a real kube-apiserver (with its
// etcd) started on 127.0.0.1; the pod's node serves its exec endpoint
// with the kubelet's own streaming library (k8s.io/cri-streaming), whose
// "container" runs local processes in a directory of the test's.
//
// The tests are opt-in, since the first run builds kube-apiserver and
// etcd from the module proxy (minutes; the binaries are kept in the user's
// cache directory, under acpterm-k8stest):
//
//	cd k8stest && ACPTERM_K8S=1 go test -timeout 60m -v .
//	ACPTERM_K8S=1 go test -run XXX -bench . -benchtime 5x .
//
// The package has no API; it is its tests.
package k8stest
