//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// TestAllowHost: acpterm run --allow-host lets the agent's commands reach
// the listed host and nothing else; what the proxy refuses is a
// network_denied event. The hosts are loopback servers of the test,
// listed by address and port (the only names the real resolver knows
// here are the machine's own): the sandbox's 127.0.0.1 is its own
// loopback, where acpterm forwards the listed port to the host's, and
// another port leads nowhere.
func TestAllowHost(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) })
	listed, other := httptest.NewServer(hello), httptest.NewServer(hello)
	t.Cleanup(listed.Close)
	t.Cleanup(other.Close)
	_, lport, _ := net.SplitHostPort(listed.Listener.Addr().String())
	_, oport, _ := net.SplitHostPort(other.Listener.Addr().String())
	prompt := strings.Join([]string{
		"curl -sS http://127.0.0.1:" + lport + "/listed",
		"curl -sS http://127.0.0.1:" + oport + "/other || echo other-failed",
		"curl -sS http://unlisted.invalid/",
	}, "\n")
	r := acpterm(t, opts{plain: true}, "run", "--format", "json", "--approve-all", "--allow-host", "127.0.0.1:"+lport,
		"-p", prompt, "--", plainAcpterm(t), "agent", "--keep-going")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs := parseEvents(t, r.stdout)
	var out strings.Builder
	for _, e := range ofKind(evs, "terminal_output") {
		out.WriteString(e.str("data"))
	}
	mustContain(t, "output", out.String(), "hello from 127.0.0.1:"+lport, "other-failed", "acpterm proxy: connection to unlisted.invalid:80 refused")
	if strings.Contains(out.String(), "hello from 127.0.0.1:"+oport) {
		t.Error("the unlisted server was reached")
	}
	created := ofKind(evs, "terminal_created")
	if len(created) == 0 {
		t.Fatalf("no terminal_created:\n%s", r.stdout)
	}
	if sb, _ := created[0]["sandbox"].(map[string]any); sb["network"] != "proxy" || fmt.Sprint(sb["allowHosts"]) != "[127.0.0.1:"+lport+"]" {
		t.Errorf("terminal_created sandbox = %v", created[0]["sandbox"])
	}
	denied := ofKind(evs, "network_denied")
	if len(denied) != 1 || denied[0].str("host") != "unlisted.invalid" || fmt.Sprint(denied[0]["port"]) != "80" || denied[0].str("protocol") != "http" {
		t.Errorf("network_denied events: %v", denied)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestAllowHostText: in text output a refusal is a line on stderr.
func TestAllowHostText(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	r := acpterm(t, opts{plain: true}, "run", "--approve-all", "--allow-host", "203.0.113.1",
		"-p", "curl -sS http://unlisted.invalid/", "--", plainAcpterm(t), "agent", "--keep-going")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "acpterm: network: refused a sandboxed connection to unlisted.invalid:80")
	mustContain(t, "stdout", r.stdout, "network limited to 1 hosts")
}

func TestAllowHostUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"run", "--allow-host", "*", "-p", "x", "--", "true"}, "--allow-host: netproxy: bad host pattern"},
		{[]string{"run", "--allow-host", "127.0.0.1", "-p", "x", "--", "true"}, "--allow-host: loopback address 127.0.0.1 needs a port"},
		{[]string{"run", "--allow-host", "a.example.com", "--network", "deny", "-p", "x", "--", "true"}, "cannot go with --network deny"},
		{[]string{"run", "--network", "none", "-p", "x", "--", "true"}, "--network must be allow or deny"},
	} {
		r := acpterm(t, opts{plain: true}, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("acpterm %q: exit %d, stderr:\n%s", tt.args, r.code, r.stderr)
		}
	}
}

// TestRemoteSSHAllowHost: --allow-host reaches the exec server, whose
// own proxy, on the target (this machine, over ssh), lets the commands
// there reach the listed host and nothing else.
func TestRemoteSSHAllowHost(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	s := needSSHD(t)
	dir := targetDir(t)
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) })
	listed, other := httptest.NewServer(hello), httptest.NewServer(hello)
	t.Cleanup(listed.Close)
	t.Cleanup(other.Close)
	_, lport, _ := net.SplitHostPort(listed.Listener.Addr().String())
	_, oport, _ := net.SplitHostPort(other.Listener.Addr().String())
	args := append([]string{"run", "--approve-all", "--allow-host", "127.0.0.1:" + lport}, remoteArgs(t, s, dir)...)
	args = append(args, "-p", "curl -sS http://127.0.0.1:"+lport+"/\ncurl -sS http://127.0.0.1:"+oport+"/\ncurl -sS http://unlisted.invalid/", "--", testExe(t))
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=remote-term"}}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "hello from 127.0.0.1:"+lport, "connection to unlisted.invalid:80 refused", "network limited to 1 hosts")
	if strings.Contains(r.stdout, "hello from 127.0.0.1:"+oport) {
		t.Errorf("the unlisted server was reached:\n%s", r.stdout)
	}
}

func init() {
	registerHostile("net-self", func() int { return serveAgent(&netSelfAgent{}) })
}

// netSelfAgent runs its prompt itself, as a shell script, and says what
// it printed: an agent's own network use, not through terminals.
type netSelfAgent struct{ baseAgent }

func (a *netSelfAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	out, _ := exec.CommandContext(ctx, "sh", "-c", promptText(req)).CombinedOutput()
	err := a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: req.SessionID, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: "net-self: " + string(out)},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// TestAllowHostConfinedAgent: a confined agent runs under the same list,
// and so do its children, setsid ones included: it reaches the listed
// host through the proxy, not another, and nothing directly.
func TestAllowHostConfinedAgent(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) })
	listed, other := httptest.NewServer(hello), httptest.NewServer(hello)
	t.Cleanup(listed.Close)
	t.Cleanup(other.Close)
	_, lport, _ := net.SplitHostPort(listed.Listener.Addr().String())
	_, oport, _ := net.SplitHostPort(other.Listener.Addr().String())
	script := "curl -sS http://127.0.0.1:" + lport + "/; echo; " +
		"setsid sh -c 'curl -sS http://127.0.0.1:" + oport + "/ || echo other-refused; curl -sS http://unlisted.invalid/'"
	r := acpterm(t, opts{plain: true, env: []string{fakeAgentEnv + "=net-self"}}, "run", "--approve-all", "--sandbox-agent",
		"--allow-host", "127.0.0.1:"+lport, "-p", script, "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "stdout", r.stdout, "hello from 127.0.0.1:"+lport, "other-refused", "connection to unlisted.invalid:80 refused")
	if strings.Contains(r.stdout, "hello from 127.0.0.1:"+oport) {
		t.Errorf("the unlisted server was reached:\n%s", r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "network limited to 127.0.0.1:"+lport+" through acpterm's proxy")
}

// TestAgentHosts: under --network proxy a confined agent reaches the
// hosts of its agents.json entry's allowHosts (its API, here a loopback
// server), and its commands do not: they get the run's list alone.
func TestAgentHosts(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the model answers") }))
	t.Cleanup(api.Close)
	_, port := mustSplit(t, api.Listener.Addr().String())
	cfgHome, state := t.TempDir(), t.TempDir()
	cfg, err := json.Marshal(map[string]any{
		"selfnet": map[string]any{"command": []string{testExe(t)}, "writable": []string{state}, "allowHosts": []string{"127.0.0.1:" + port}},
		"cmdnet":  map[string]any{"command": []string{plainAcpterm(t), "agent", "--keep-going"}, "writable": []string{state}, "allowHosts": []string{"127.0.0.1:" + port}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfgHome, "acpterm"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgHome, "acpterm", "agents.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	curl := "curl -sS http://127.0.0.1:" + port + "/"
	r := acpterm(t, opts{plain: true, env: []string{"XDG_CONFIG_HOME=" + cfgHome, fakeAgentEnv + "=net-self"}},
		"run", "--approve-all", "--network", "proxy", "-p", curl, "selfnet")
	if r.code != 0 {
		t.Fatalf("the agent: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "the agent's stdout", r.stdout, "net-self: the model answers")
	mustContain(t, "stderr", r.stderr, "sandbox: agent and its commands", "the agent also reaches 127.0.0.1:"+port)

	r = acpterm(t, opts{plain: true, env: []string{"XDG_CONFIG_HOME=" + cfgHome}},
		"run", "--approve-all", "--network", "proxy", "-p", curl, "cmdnet")
	if r.code != 0 {
		t.Fatalf("its command: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "the model answers") {
		t.Errorf("a command reached the agent's API host:\n%s", r.stdout)
	}
	// Its list is empty, so NO_PROXY sends 127.0.0.1 to its own loopback,
	// where nothing listens.
	mustContain(t, "its command's output", r.stdout, "FAIL curl", "network limited to 0 hosts")
}

func mustSplit(t *testing.T, addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// TestAllowHostRemote: with --remote, the target's proxy refuses what is
// not on the list, and the refusal is a network_denied event here, once,
// as a proxy of this machine's reports it; in text output a line on
// stderr, once.
func TestAllowHostRemote(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	s := needSSHD(t)
	for _, format := range []string{"json", "text"} {
		args := append([]string{"run", "--format", format, "--approve-all", "--allow-host", "203.0.113.1"}, remoteArgs(t, s, targetDir(t))...)
		r := acpterm(t, opts{plain: true}, append(args, "-p", "curl -sS http://unlisted.invalid/", "--", plainAcpterm(t), "agent", "--keep-going")...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", format, r.code, r.stdout, r.stderr)
		}
		line := "acpterm: network: refused a sandboxed connection to unlisted.invalid:80"
		if format == "text" {
			if n := strings.Count(r.stderr, line); n != 1 {
				t.Errorf("text: the refusal is on stderr %d times, want once:\n%s", n, r.stderr)
			}
			continue
		}
		denied := ofKind(parseEvents(t, r.stdout), "network_denied")
		if len(denied) != 1 || denied[0].str("host") != "unlisted.invalid" || fmt.Sprint(denied[0]["port"]) != "80" || denied[0].str("hint") != "--allow-host unlisted.invalid" {
			t.Errorf("json: network_denied events: %v\nstderr:\n%s", denied, r.stderr)
		}
		if strings.Contains(r.stderr, line) {
			t.Errorf("json: the refusal is on stderr too:\n%s", r.stderr)
		}
	}
}
