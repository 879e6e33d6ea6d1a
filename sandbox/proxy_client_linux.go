package sandbox

import "github.com/acpterm/acpterm/sandbox/netproxy"

// proxyCredentials registers who with the spawner's proxy, for its
// questions, and returns the credentials the command's proxy URLs carry
// (none when who is "" or the spawner has no proxy). Release (or a failed
// start) ends them.
func (c *Child) proxyCredentials(who string) netproxy.Credentials {
	if who == "" || c.s.proxy == nil {
		return netproxy.Credentials{}
	}
	cred, drop := c.s.proxy.px.AddClient(who)
	c.dropCred = drop
	return cred
}
