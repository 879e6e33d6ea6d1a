// Package netproxy is the one way out of a sandbox whose network is
// limited to a list of hosts: an HTTP (CONNECT and plain forwarding) and
// SOCKS5 proxy, on one listener, that connects only to the hosts its
// allow-list names and resolves names itself.
//
// The sandbox package runs one for Policy.Network ProxyNetwork: the
// command's network namespace holds only a loopback, on which the
// sandbox helper opens the proxy's listening socket and hands it out to
// the host, so the proxy accepts inside the namespace and connects
// outside it. The package is usable on its own for any listener.
//
// # Allow-list
//
// ParseRules reads host patterns: "api.example.com" (that name),
// "*.example.com" (its subdomains, not the name itself), either with an
// optional ":port" (else any port), and address literals ("127.0.0.1:8080",
// "[::1]:443"), which only a request for that address matches: a name is
// never checked against an address entry, nor an address against a name.
//
// # What is refused, and how
//
//   - HTTP: 403 Forbidden with a plain-text body naming the host, the
//     port and the list; 400 for a request that is not a proxy request.
//   - SOCKS5: reply code 0x02 (connection not allowed by ruleset); 0x07
//     for BIND and UDP ASSOCIATE, which are not supported.
//   - A listed name that resolves only to loopback, private, link-local
//     or unspecified addresses is refused the same way, unless
//     Options.AllowPrivate: a name whose DNS an attacker controls must
//     not lead to the host's own services.
//
// Each refusal is passed to Options.OnDeny as a Denial (time, protocol,
// host, port, reason), for structured reports.
//
// # Asking instead of refusing
//
// With Options.Ask, a connection to a host that is not on the list waits
// while an Asker's Decide hook is asked (Question: the host and port,
// the protocol, and the client): allow it once, allow the host and port
// for the session (every proxy sharing the Asker lets it through from
// then on; Granted lists them), or deny. One question per host and port
// at a time (later connections to it wait for that answer), at most
// MaxPending at once, each bounded by Timeout; Close ends the waits.
//
// Who connects is what the proxy knows, never what the connection
// claims in its request: AddClient makes credentials for a label, which a
// client presents in its proxy URL (http://USER:PASSWORD@ADDR: the
// Proxy-Authorization header, or SOCKS5's user name and password, RFC
// 1929). A connection without them, or with unknown ones, is served all
// the same and named Options.Client. Credentials tell apart the clients
// that cannot read each other's environment; a client that can read
// another's can present its credentials, and so be asked about as it.
//
// # Bounds
//
// Connections served at once (Options.MaxConns; past it the proxy stops
// accepting), the time to send a request head and the idle time between
// requests (HandshakeTimeout), the size of an HTTP request head
// (MaxHeaderBytes), the time to resolve and connect (DialTimeout). Close
// ends every connection and joins every goroutine.
//
// # Example
//
//	p, err := netproxy.New([]string{"api.example.com", "*.githubusercontent.com:443"},
//		&netproxy.Options{OnDeny: func(d netproxy.Denial) { log.Print(d) }})
//	if err != nil {
//		return err // a bad pattern
//	}
//	defer p.Close()
//	l, err := net.Listen("tcp", "127.0.0.1:0")
//	…
//	go p.Serve(l) // HTTP_PROXY=http://ADDR, ALL_PROXY=socks5h://ADDR
package netproxy
