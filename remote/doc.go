// Package remote runs ACP terminals on another machine, a container or a
// pod, with the guarantees the terminal package gives locally: sandbox,
// cgroups, bounded tail, whole-tree kill, no orphans.
//
// The other side runs the exec server ([Serve]; `acpterm exec-server`)
// on its own stdin and stdout, reached through a tool the user already
// configures ([ParseTarget], [Command], [Dial]): `ssh -T`, `podman exec
// -i`, `docker exec -i`, `kubectl exec -i`. To the library a transport is
// any byte stream, so a Go host can hand Serve and [NewClient] an
// x/crypto/ssh session or a client-go stream instead:
//
//	t, err := remote.ParseTarget("ssh://me@devbox/srv/app")
//	cmd, err := remote.Command(t, &remote.CommandOptions{ServerArgs: []string{"--sandbox", "workspace-write"}})
//	conn, err := remote.Dial(cmd)
//	c, err := remote.NewClient(ctx, conn, nil) // fails with ssh's own words in conn.Stderr()
//	defer c.Close()                             // the server then kills everything it ran
//	sub, err := c.Subscribe("")                 // live output, like terminal.Manager.Subscribe
//	resp, err := c.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: sid, Command: "make test"})
//
// # Protocol
//
// JSON-RPC 2.0, one message per line. The client opens with remote/hello
// (version, the target's OS and architecture, its default cwd, isolation
// and what its kernel can enforce of the server's sandbox), then calls
// ACP's own terminal/create, terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release with ACP's param and result types.
// For each terminal the server streams notifications, numbered by Seq:
// remote/terminal_started, remote/output (raw bytes, base64, with the
// Offset of their first byte in everything the command wrote),
// remote/exit after the last output, remote/released. The stream never
// holds up a command: when the transport is slower than the command, the
// server drops output and the next chunk's Offset says how much;
// remote/subscribe replays what the server still retains after a cursor.
// The terminal's tail (terminal/output) is complete whatever the stream
// dropped. remote/set_session_cwd, remote/release_session and remote/ping
// complete the set; the fs methods will join the same table.
//
// # Faults
//
// The server's dead-man rule: when its input ends (the transport
// dropped: ssh killed, the network gone, the container stopped) or the
// client stops reading for StallTimeout, it SIGKILLs every command's
// process group at once, sweeps their cgroups (setsid descendants too),
// and exits within [ShutdownBound]. On the client, the end of the
// connection fails every call and wait in flight with [ErrDisconnected],
// and a server that sends nothing while a ping waits is given up after
// ClientOptions.KeepAliveTimeout.
package remote
