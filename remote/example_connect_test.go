package remote_test

import (
	"context"
	"fmt"
	"log"
	"os/exec"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/remote"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/terminal"
)

// agentClient is an ACP client whose terminals run on a terminal.Runtime:
// a *terminal.Manager on this machine, a *remote.Client elsewhere. It
// advertises terminals and nothing else (embed a *remote.Files, or a
// *workspace.Workspace locally, to offer fs as well).
type agentClient struct {
	terminal.Runtime
}

func (agentClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

func (agentClient) SessionUpdate(_ context.Context, n *acp.SessionNotification) error {
	if tc, ok := n.Update.(*acp.ToolCall); ok {
		fmt.Println("tool call:", tc.Title)
	}
	return nil
}

// Connect finds or copies acpterm on the target, starts its exec server
// through ssh (in a process group of its own: Ctrl-C reaches this program
// only, which can cancel the turn), waits for its hello and checks that
// the target enforces the sandbox. The agent runs here; its commands run
// on the target, in the session's directory there.
func ExampleConnect() {
	ctx := context.Background()
	c, err := remote.Connect(ctx, "ssh://me@devbox/srv/app", &remote.ConnectOptions{
		// As terminal.Policy.Sandbox locally: write only in /srv/app.
		// A target that cannot enforce it fails here (*remote.SandboxError);
		// WithoutMountNamespace accepts a kernel without user namespaces.
		Sandbox: &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Network: sandbox.DenyNetwork, WithoutMountNamespace: true},
		Client: &remote.ClientOptions{
			// Asked here before each command is sent, as Policy.Decide.
			Decide: func(_ context.Context, info terminal.Info) terminal.Decision {
				fmt.Printf("running %q in %s on %s\n", info.Command, info.Cwd, info.Where)
				return terminal.Allow()
			},
		},
	})
	if err != nil {
		log.Fatal(err) // ssh's own words for a refused connection (*remote.DialError)
	}
	defer c.Close() // releases the terminals; the server then kills what is left

	conn, err := acp.StartAgent(exec.Command("my-agent", "--acp"), agentClient{c}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Initialize(ctx, nil); err != nil {
		log.Fatal(err)
	}
	// The cwd is the target's: the session's terminals run there.
	sess, err := c.NewSessionOn(ctx, conn, &acp.NewSessionRequest{Cwd: "/srv/app"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.ReleaseSession(ctx, sess.SessionID)
	resp, err := conn.Prompt(ctx, &acp.PromptRequest{SessionID: sess.SessionID,
		Prompt: []acp.ContentBlock{&acp.TextContent{Text: "run the tests"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stop reason:", resp.StopReason)
}
