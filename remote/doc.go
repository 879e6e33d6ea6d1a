// Package remote runs ACP terminals on another machine, a container or a
// pod, with the guarantees the terminal package gives locally: sandbox,
// cgroups, bounded tail, whole-tree kill, no orphans.
//
// A [Client] is a [terminal.Runtime], as a local *terminal.Manager is: the
// same calls (CreateTerminal and the four other terminal methods,
// CreateTerminalHeld, Subscribe, SetSessionCwd, NewSessionOn,
// ReleaseSession, Terminals, KillAll, Close, and terminal.Input's Write,
// CloseStdin and Resize) and the same events, so a
// client written against terminal.Runtime runs its commands here or there.
// Embedded in an ACP client it advertises terminals and nothing else; the
// target's fs methods are offered only by embedding [Client.Files] too.
//
// [Connect] makes a ready client in one call: it finds this acpterm on the
// target or copies it there ([Install]), starts its exec server through
// the tool the user already configures (`ssh -T`, `podman exec -i`,
// `docker exec -i`, `kubectl exec -i`) in a process group of its own, so
// that a Ctrl-C at the terminal reaches the caller and not the transport,
// waits for the hello, and checks that the target enforces the
// sandbox.Policy asked for (a target that cannot fails, as a local create
// does, unless the policy accepts less: WithoutMountNamespace,
// BestEffort). A failure to connect is told in the transport's words:
//
//	c, err := remote.Connect(ctx, "ssh://me@devbox/srv/app", &remote.ConnectOptions{
//		Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WithoutMountNamespace: true},
//		Client:  &remote.ClientOptions{Decide: askUser}, // asked here, before anything is sent
//	})
//	if err != nil {
//		return err // ssh's "Connection refused", or a *remote.SandboxError
//	}
//	defer c.Close() // releases the terminals; the server then kills what is left
//	conn, err := acp.StartAgent(cmd, myClient{Runtime: c}, nil) // the agent runs here
//	sess, err := c.NewSessionOn(ctx, conn, &acp.NewSessionRequest{Cwd: "/srv/app"})
//
// The other side runs the exec server ([Serve]; `acpterm exec-server`) on
// its own stdin and stdout. The steps of Connect are there for a host that
// needs them apart ([ParseTarget], [Install], [Command], [Dial],
// [NewClient]); to the library a transport is any byte stream, so a Go
// host can hand Serve and NewClient an x/crypto/ssh session or a
// client-go stream instead.
//
// # Protocol
//
// JSON-RPC 2.0, one message per line. The client opens with remote/hello
// (version, the target's OS and architecture, its default cwd, isolation
// and what its kernel can enforce of the server's sandbox), then calls
// ACP's own terminal/create, terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release, fs/read_text_file and
// fs/write_text_file, with ACP's param and result types.
// remote/set_session_cwd, remote/release_session, remote/kill_all,
// remote/ping and the two below complete the set. The client sends its
// creates as remote/create with a tag, which the terminal's first
// notification carries back: it may arrive before the create's answer.
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
//   - Held (lossless), asked for per terminal at create (remote/create, a
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
//     rather than waited for. Client.SubscribeHeld and
//     Client.CreateTerminalHeld make the terminals they cover lossless.
//
// # Questions about hosts
//
// An exec server whose commands reach the network through a list of
// hosts (started with --allow-host, or Serve with a sandbox policy of
// ProxyNetwork) can put a host that is not on the list to the client, as
// a proxy of this machine's puts it to its Asker: the one call a server
// makes, remote/ask_host, sent only to a client whose hello said it
// answers (ClientOptions.AskHost). The connection waits for the answer,
// at most netproxy.DefaultAskTimeout; a client that does not answer is
// never asked, and the host is refused at once. The question comes from
// the target: the host, the port and the command's name are shown
// escaped. What the proxy refuses, asked or not, is reported to a client
// that takes it (ClientOptions.OnDeny) as remote/network_denied, in order
// with the terminals' events: before the refused command's exit.
//
// # Input and ptys
//
// A Client is a [terminal.Input] too: Write, CloseStdin and Resize reach a
// terminal on the target as remote/write (the bytes base64, at most
// terminal.MaxStdinWrite a call), remote/close_stdin and remote/resize.
// A terminal takes input when its terminal/create asked for a stdin pipe
// or a pseudo-terminal in _meta (terminal.MetaStdin, terminal.MetaPTY;
// ClientOptions.PTY asks for the second on every create); a pty is the
// target's own, opened by the exec server there (Linux targets), and
// terminal/output gives its rendered text. The hello says the server
// serves input (HelloResponse.Input) and ptys (HelloResponse.PTY): with
// an exec server of an earlier release, which says neither, every input
// call fails at once with an error wrapping terminal.ErrInvalid, and
// nothing is sent.
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
// ClientOptions.KeepAliveTimeout. The subscriptions then get, for each
// terminal still live, the EventExited (if its exit was not heard) and
// the EventReleased it would have had, with Event.Lost saying why, before
// ErrDisconnected: a held subscription never waits for an exit that
// cannot come.
package remote
