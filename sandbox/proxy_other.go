//go:build !linux

package sandbox

// proxyRun exists on Linux only; Wrap refuses ProxyNetwork elsewhere.
type proxyRun struct{}

func (*proxyRun) stop() {}
