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
//	                                            // (SubscribeLossless: every byte, the commands at its pace)
//	resp, err := c.CreateTerminal(ctx, &acp.CreateTerminalRequest{SessionID: sid, Command: "make test"})
//
// # Protocol
//
// JSON-RPC 2.0, one message per line. The client opens with remote/hello
// (version, the target's OS and architecture, its default cwd, isolation
// and what its kernel can enforce of the server's sandbox), then calls
// ACP's own terminal/create, terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release, fs/read_text_file and
// fs/write_text_file, with ACP's param and result types.
// remote/set_session_cwd, remote/release_session, remote/ping and the two
// below complete the set.
//
// For each terminal the server streams notifications, numbered by Seq:
// remote/terminal_started, remote/output (raw bytes with the Offset of
// their first byte in everything the command wrote, in chunks of at most
// 256 KiB), remote/exit after the last output, remote/released. Output
// travels in one of three forms (OutputNotification): raw bytes attached
// to the message, when the client asked for attachments in its hello (a
// framing of internal/jsonrpc2's: a line of \x01 and the size, the bytes,
// then the message's line; nothing is escaped, encoded or scanned), else
// a JSON string ("text") for valid UTF-8 that escaping does not make
// longer than base64, else base64 ("data").
//
// A stream is one of two kinds.
//
//   - Default: the stream never holds up a command. When the transport
//     or the client is slower than the command, the server drops output
//     and the next chunk's Offset says how much; remote/subscribe replays
//     what the server still retains after a cursor. The terminal's tail
//     (terminal/output) is complete whatever the stream dropped.
//   - Lossless, asked for per terminal at create (remote/create, a
//     terminal/create with a window) or per restart (remote/subscribe
//     with a window): the server drops nothing and holds the command
//     instead, which blocks on its pipe as it would writing to a slow
//     reader. Flow control is by credit: the server sends output only
//     below offset taken+window, where taken is how far the client's
//     subscribers have taken it, which the client reports with
//     remote/grant notifications as they do. Memory stays bounded on both
//     sides: on the server, the terminal's subscriber buffer and the chunk
//     being sent; on the client, the window per lossless subscriber. A
//     held command holds up nothing else: the other terminals stream, the
//     calls (kill and release of that terminal included) are answered,
//     the connection is read, and a released terminal's output is skipped
//     rather than waited for. Client.SubscribeLossless makes the
//     terminals it covers lossless.
//
// The client trusts the target to run commands, not to describe them:
// the events of a terminal it did not create, and an exit of one of its
// terminals unlike the first, reach no subscription (they are counted,
// Client.IgnoredEvents, and reported once), and lines written before the
// hello (a shell start-up file's greeting) are skipped.
//
// # Faults
//
// The server's dead-man rule: when its input ends (the transport
// dropped: ssh killed, the network gone, the container stopped) or the
// client stops reading for StallTimeout, it SIGKILLs every command's
// process group at once (held ones too), sweeps their cgroups (setsid descendants too),
// and exits within [ShutdownBound]. On the client, the end of the
// connection fails every call and wait in flight with [ErrDisconnected],
// and a server that sends nothing while a ping waits is given up after
// ClientOptions.KeepAliveTimeout.
package remote
