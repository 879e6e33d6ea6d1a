//go:build unix

package client

import (
	"bufio"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/terminal"
)

// TestMCPOfferToken: a connection without the relay's token is closed
// unanswered; with it, MCP is served; close removes the socket.
func TestMCPOfferToken(t *testing.T) {
	dir := t.TempDir()
	m := terminal.NewManager(&terminal.Options{DefaultCwd: dir})
	defer m.Close()
	o, err := startMCPOffer(m, dir, "test", t.Logf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(o.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the socket's directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	for _, tc := range []struct {
		hello string
		ok    bool
	}{
		{MCPHello + "wrong\n", false},
		{"\n", false},
		{MCPHello + o.token + "\n", true},
	} {
		c, err := net.Dial("unix", o.sock)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, tc.hello+initialize); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		got := err == nil && strings.Contains(line, `"protocolVersion":"2025-06-18"`)
		if got != tc.ok {
			t.Errorf("hello %q: answer %q, %v; want served=%v", tc.hello, line, err, tc.ok)
		}
		c.Close()
	}
	o.close()
	if _, err := os.Stat(o.dir); !os.IsNotExist(err) {
		t.Errorf("after close, the socket's directory: %v", err)
	}
}
