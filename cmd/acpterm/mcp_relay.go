package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/acpterm/acpterm/cmd/acpterm/internal/client"
)

// mcpRelay is acpterm mcp --connect SOCKET: the stdio MCP server that
// acpterm run offers its agent, relaying MCP between stdin/stdout and the
// run's socket, where the run serves it on its own terminals. The token
// comes in the environment (client.MCPTokenEnv), as the run offered it.
func mcpRelay(sock string, stdin io.Reader, stdout, stderr io.Writer) int {
	token := os.Getenv(client.MCPTokenEnv)
	if token == "" {
		fmt.Fprintf(stderr, "acpterm mcp: --connect needs %s in the environment, as acpterm run offers the server\n", client.MCPTokenEnv)
		return client.ExitUsage
	}
	network, addr, err := relayAddr(sock)
	if err != nil {
		fmt.Fprintf(stderr, "acpterm mcp: --connect %q: %v\n", sock, err)
		return client.ExitUsage
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		fmt.Fprintf(stderr, "acpterm mcp: connecting to the acpterm run that offered this server: %v\n", err)
		return client.ExitFailure
	}
	defer c.Close()
	if _, err := io.WriteString(c, client.MCPHello+token+"\n"); err != nil {
		fmt.Fprintf(stderr, "acpterm mcp: %v\n", err)
		return client.ExitFailure
	}
	// The agent's requests go up until its stdin ends, which ends the
	// run's side of the session; the answers come down until the run
	// closes the connection. A dead run ends the relay at once.
	up := make(chan struct{})
	go func() {
		defer close(up)
		_, _ = io.Copy(c, stdin)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	_, err = io.Copy(stdout, c)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintf(stderr, "acpterm mcp: %v\n", err)
		return client.ExitFailure
	}
	return client.ExitOK
}

// relayAddr is where --connect's value leads: a unix socket's path, or a
// loopback address and port (what acpterm run gives an agent whose
// sandbox makes no unix socket). Nothing else: the relay hands the run's
// token to whatever it connects to.
func relayAddr(s string) (network, addr string, err error) {
	if strings.HasPrefix(s, "/") {
		return "unix", s, nil
	}
	ap, perr := netip.ParseAddrPort(s)
	if perr != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return "", "", errors.New("want a unix socket's absolute path or a loopback address and port, as acpterm run gives it")
	}
	return "tcp", ap.String(), nil
}
