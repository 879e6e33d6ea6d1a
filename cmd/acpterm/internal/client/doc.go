// Package client is acpterm's headless ACP client: it launches an agent,
// runs one prompt turn with it and shows the turn, serving the agent's
// terminal/*, fs/* and permission requests on the way.
//
// Run does the whole job from a Config:
//
//	code := client.Run(ctx, &client.Config{
//		Agent:    []string{"my-agent", "--acp"},
//		Prompt:   "run the tests",
//		Approval: permission.ApprovalAll,
//		Stdout:   os.Stdout,
//		Stderr:   os.Stderr,
//	})
//	os.Exit(code)
//
// The fs methods are served by a workspace.Workspace (the public package
// workspace), its writes obeying the sandbox mode of the run's commands.
// The turn is shown by the renderers of package render (text for people,
// JSON for programs), the agent's display terminals through
// render.DisplayTerminals. The permission questions, and the one reader of
// the terminal they are answered on, are package permission's: Config's
// Approval says who answers them. The commands of the MCP server offered
// to the agent are shown under its tool calls by package mcptie, and
// package confined tells a turn in which acpterm's sandbox stopped every
// command the agent ran (a run of one prompt then exits with status 6).
package client
