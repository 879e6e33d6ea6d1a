// Package login is how acpterm logs in to an agent: it picks among the
// authentication methods the agent advertises, asks the user on the
// terminal when it cannot, runs a terminal login only after showing it
// (and refusing the variables that make programs run code), and says what
// to do when the agent still wants authentication.
//
// Two callers use it. `acpterm login` is Run, given a Starter that starts
// the agent as acpterm run does:
//
//	code := login.Run(ctx, &login.Config{Agent: agent, Start: starter, Stderr: os.Stderr})
//
// `acpterm run` opens its session through a Session, which authenticates
// with --auth up front, or once after the agent answers -32000, on the
// run's connection (its Host):
//
//	auth, code, msg := login.Start(ctx, host, authMethods, &login.Options{Agent: agent})
//	code, msg = auth.Call(ctx, "session/new", func(ctx context.Context) error { … })
//
// Everything the agent sends (names, IDs, descriptions, commands,
// variables) is attacker-controlled: every line this package writes is
// sanitized.
package login
