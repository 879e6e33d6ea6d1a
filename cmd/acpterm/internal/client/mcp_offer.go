package client

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/mcptie"
	"github.com/acpterm/acpterm/internal/proc/owner"
	"github.com/acpterm/acpterm/internal/text/randhex"
	"github.com/acpterm/acpterm/mcpexec"
)

// The execution MCP server that acpterm run offers its agent
// (Config.OfferMCP): in session/new.mcpServers, a stdio server the agent
// starts, `acpterm mcp --connect SOCKET`, which relays MCP to a unix
// socket this run listens on; or, for an agent confined with its network
// limited to a list (whose sandbox makes no unix socket), `--connect
// 127.0.0.1:PORT`, a loopback port this run listens on as well, which the
// agent's sandbox forwards into its namespace. Each connection is served by mcpexec on the
// run's own terminal manager, so the commands run under the run's
// sandbox, permission prompts and limits, and show live like the
// agent's terminals.

// MCPTokenEnv names the variable that carries the relay's token: the
// agent gets it in the server's env, so that only the relay it starts
// can connect.
const MCPTokenEnv = "ACPTERM_MCP_TOKEN"

// MCPHello is the relay's first line on the socket, followed by the
// token.
const MCPHello = "ACPTERM-MCP "

// mcpHelloTimeout bounds the wait for a connection's first line.
const mcpHelloTimeout = 5 * time.Second

// maxMCPConns bounds the relays served at once: an agent starts one per
// session it opens.
const maxMCPConns = 8

// mcpOffer listens for the relays of one run.
type mcpOffer struct {
	dir, sock, token string
	exe              string // this acpterm, which the agent starts as the relay
	mgr              mcpexec.Runtime
	cwd              string
	version          string
	logf             func(format string, args ...any)
	// toolCall is told the tool call each command came from, where
	// the agent said (mcpexec.Options.ToolCall).
	toolCall func(context.Context, mcpexec.ToolCallHint)

	ln     net.Listener
	tcp    net.Listener // 127.0.0.1, for an agent without unix sockets
	viaTCP bool         // the agent is given tcp's address (useTCP)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  int
	n      int // connections served, for their session IDs
}

// startMCPOffer listens on a socket in a private directory and serves
// relays until close.
func startMCPOffer(mgr mcpexec.Runtime, cwd, version string, logf func(string, ...any), toolCall func(context.Context, mcpexec.ToolCallHint)) (*mcpOffer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("offering the MCP server: cannot tell where this acpterm is: %v", err)
	}
	// Named after this process, so that the next acpterm removes it if
	// this one is killed before close.
	dir, err := owner.TempDir("mcp")
	if err != nil {
		return nil, fmt.Errorf("offering the MCP server: %v", err)
	}
	o := &mcpOffer{dir: dir, sock: filepath.Join(dir, "s"), token: randhex.String(16), exe: exe,
		mgr: mgr, cwd: cwd, version: version, logf: logf, toolCall: toolCall}
	if o.ln, err = net.Listen("unix", o.sock); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("offering the MCP server: %v", err)
	}
	if o.tcp, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		o.ln.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("offering the MCP server: %v", err)
	}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.wg.Add(2)
	go o.accept(o.ln)
	go o.accept(o.tcp)
	return o, nil
}

// tcpAddr is the loopback address a relay may connect to instead of the
// socket ("" without an offer).
func (o *mcpOffer) tcpAddr() string {
	if o == nil {
		return ""
	}
	return o.tcp.Addr().String()
}

// useTCP gives the agent the loopback address rather than the socket: its
// sandbox makes no unix socket (agentstart.Start.MCPAddr).
func (o *mcpOffer) useTCP() {
	if o != nil {
		o.viaTCP = true
	}
}

// server is the mcpServers entry: never a type (stdio has none), and
// args and env always present (qwen skips a server without them).
func (o *mcpOffer) server() acp.MCPServer {
	addr := o.sock
	if o.viaTCP {
		addr = o.tcpAddr()
	}
	return &acp.MCPServerStdio{
		Name:    "acpterm",
		Command: o.exe,
		Args:    []string{"mcp", "--connect", addr},
		Env:     []acp.EnvVariable{{Name: MCPTokenEnv, Value: o.token}},
	}
}

func (o *mcpOffer) accept(ln net.Listener) {
	defer o.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				o.logf("acpterm: MCP server: %v", err)
			}
			return
		}
		o.mu.Lock()
		full := o.conns >= maxMCPConns
		if !full {
			o.conns++
			o.n++
		}
		n := o.n
		o.mu.Unlock()
		if full {
			o.logf("acpterm: MCP server: refused a relay: %d are connected already", maxMCPConns)
			c.Close()
			continue
		}
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			defer func() {
				o.mu.Lock()
				o.conns--
				o.mu.Unlock()
			}()
			o.serve(c, n)
		}()
	}
}

// serve checks a relay's token and serves MCP on its connection.
func (o *mcpOffer) serve(c net.Conn, n int) {
	_ = c.SetReadDeadline(time.Now().Add(mcpHelloTimeout))
	br := bufio.NewReaderSize(c, 256)
	line, err := br.ReadSlice('\n')
	tok, ok := strings.CutPrefix(strings.TrimSuffix(string(line), "\n"), MCPHello)
	if err != nil || !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(o.token)) != 1 {
		o.logf("acpterm: MCP server: refused a connection without the relay's token")
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	srv, err := mcpexec.NewServer(&mcpexec.Options{
		Runtime:   o.mgr,
		SessionID: acp.SessionID(mcptie.SessionPrefix + strconv.Itoa(n)),
		Cwd:       o.cwd,
		Version:   o.version,
		Logf:      o.logf,
		ToolCall: func(h mcpexec.ToolCallHint) {
			if o.toolCall != nil {
				o.toolCall(o.ctx, h)
			}
		},
	})
	if err != nil {
		o.logf("acpterm: MCP server: %v", err)
		c.Close()
		return
	}
	if err := srv.Run(o.ctx, &bufferedConn{Reader: br, Conn: c}); err != nil && o.ctx.Err() == nil {
		o.logf("acpterm: MCP server: %v", err)
	}
}

// bufferedConn reads what the hello's reader has buffered first.
type bufferedConn struct {
	*bufio.Reader
	net.Conn
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.Reader.Read(p) }

// close stops listening, ends every connection (their commands are
// released with their sessions) and removes the socket's directory.
func (o *mcpOffer) close() {
	if o == nil {
		return
	}
	o.ln.Close()
	o.tcp.Close()
	o.cancel()
	o.wg.Wait()
	os.RemoveAll(o.dir)
}

// offerMCP starts the server offered to the agent, with Config.OfferMCP,
// on this run's terminals: here, or with --remote on the target (the
// relay the agent starts runs here, beside the agent, and reaches this
// run's socket; the commands go on to the target). Not with
// --remote-agent: the agent there could not reach the socket here.
func (d *driver) offerMCP() {
	if !d.cfg.OfferMCP {
		return
	}
	if r := d.cfg.Remote; r != nil && r.Agent {
		d.warn("acpterm: the MCP server is not offered with --remote-agent: the agent runs on the target, and the server's relay could not reach this run")
		return
	}
	rt, ok := d.mgr.(mcpexec.Runtime)
	if !ok {
		d.warn("acpterm: the MCP server is not offered: this run's terminals take no input")
		return
	}
	o, err := startMCPOffer(rt, d.cwd, Version(), func(format string, args ...any) { d.warn(fmt.Sprintf(format, args...)) }, d.ties.Hint)
	if err != nil {
		d.warn("acpterm: " + err.Error())
		return
	}
	d.mcp = o
}

// mcpServers is session/new's (and load's, resume's) mcpServers.
func (d *driver) mcpServers() []acp.MCPServer {
	if d.mcp == nil {
		return []acp.MCPServer{}
	}
	return []acp.MCPServer{d.mcp.server()}
}
