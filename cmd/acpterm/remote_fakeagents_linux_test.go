package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/acpterm/acpterm/acp"
)

// The fake agents of the --remote tests, run as ACP agents by the test
// binary itself (registerHostile).

func init() {
	registerHostile("remote-session", func() int { return serveAgent(&remoteSessionAgent{}) })
	registerHostile("remote-where", func() int { return serveAgent(&remoteSessionAgent{where: true}) })
	// An agent that clings: it starts a setsid daemon, ignores SIGTERM,
	// and outlives the end of its stdin.
	registerHostile("remote-clinging", func() int {
		signal.Ignore(syscall.SIGTERM)
		daemon := exec.Command("setsid", "sleep", "1061")
		if err := daemon.Start(); err != nil {
			return 1
		}
		serveAgent(&remoteSessionAgent{where: true})
		select {}
	})
}

// remoteSessionAgent says the session's cwd it was given, and with a prompt
// holding "fs" writes from-agent.txt there and reads marker.txt back
// through fs/*, then tries .git/config.
type remoteSessionAgent struct {
	baseAgent
	cwd string
	// where: say where the agent itself runs (its ssh connection) and
	// what a command it runs itself in the session's cwd reads there.
	where bool
}

func (a *remoteSessionAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.cwd = req.Cwd
	return &acp.NewSessionResponse{SessionID: "sess_remote"}, nil
}

func (a *remoteSessionAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn := a.conn.Load()
	say := func(text string) error {
		return conn.SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID,
			Update: &acp.AgentMessageChunk{Content: &acp.TextContent{Text: text}}})
	}
	if err := say("cwd=" + a.cwd + "\n"); err != nil {
		return nil, err
	}
	if a.where {
		cmd := exec.CommandContext(ctx, "cat", "marker.txt")
		cmd.Dir = a.cwd
		out, err := cmd.CombinedOutput()
		// The server's port: an ssh session the tests themselves run
		// in has another.
		conn := strings.Fields(os.Getenv("SSH_CONNECTION"))
		port := ""
		if len(conn) == 4 {
			port = conn[3]
		}
		if err := say(fmt.Sprintf("agent via port %q read %q (%v)\n", port, out, err)); err != nil {
			return nil, err
		}
	}
	if strings.Contains(promptText(req), "fs") {
		_, err := conn.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: req.SessionID, Path: filepath.Join(a.cwd, "from-agent.txt"), Content: "written through fs\n"})
		if err != nil {
			return nil, err
		}
		got, err := conn.ReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: req.SessionID, Path: filepath.Join(a.cwd, "marker.txt")})
		if err != nil {
			return nil, err
		}
		if err := say("read=" + got.Content); err != nil {
			return nil, err
		}
		_, err = conn.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: req.SessionID, Path: filepath.Join(a.cwd, ".git", "config"), Content: "[core]\n\tfsmonitor = evil\n"})
		if err := say(fmt.Sprintf("git=%v\n", err)); err != nil {
			return nil, err
		}
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
