//go:build linux

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAskHostAtTerminal is a person at a terminal (tmux) whose agent's
// command connects to a host that is not on the list: a loopback server
// stands for that host (its address, which the command asks the proxy
// for: curl --noproxy ” sends even a loopback address to it). The
// connection waits while the question shows, naming the host and port
// and the command with its terminal; "y" lets that one connection
// through, the next asks again, "a" lets the host through for the rest
// of the run, and the one after is not asked about. --approve-all, which
// answers the agent's requests, answers none of these.
func TestAskHostAtTerminal(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello%s", strings.ReplaceAll(r.URL.Path, "/", "-"))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	host := "127.0.0.1:" + port
	bin := plainAcpterm(t)
	p := startTmux(t, t.TempDir(), []string{"NO_COLOR=1", "TERM=tmux-256color"}, bin,
		"run", "--approve-all", "--network", "proxy", "--", bin, "agent", "--keep-going")
	const prompt = "› "
	p.waitRaw(prompt, 60*time.Second)
	question := "wants to connect to " + host + ", which is not on the allow-list"
	send := func(path string) {
		p.tmux("send-keys", "-t", "acpterm", "-l", "curl -sS --noproxy '' http://"+host+"/"+path)
		p.tmux("send-keys", "-t", "acpterm", "Enter")
	}
	asked := func(n int) {
		t.Helper()
		p.waitFor(fmt.Sprintf("question %d", n), 60*time.Second, func(_ []string, raw string) bool {
			return strings.Count(raw, question) >= n
		})
	}
	idle := func() {
		t.Helper()
		p.waitFor("the prompt after the turn", 60*time.Second, func(screen []string, _ string) bool {
			return len(screen) > 0 && screen[len(screen)-1] == strings.TrimSpace(prompt)
		})
	}

	send("once")
	asked(1)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server was reached %d times before the answer", n)
	}
	screen := strings.Join(p.screen(), "\n")
	for _, want := range []string{"acpterm: network: the command sh -c 'curl -sS --noproxy ", "http://" + host + "/once' (terminal term_", question,
		"[y]es, this connection once; [a]lways, " + host + " for the rest of this run; [n]o"} {
		if !strings.Contains(strings.ReplaceAll(screen, "\n", ""), want) {
			t.Errorf("the question lacks %q; the screen:\n%s", want, screen)
		}
	}
	p.tmux("send-keys", "-t", "acpterm", "-l", "y")
	p.waitRaw("hello-once", 60*time.Second)
	idle()

	send("again")
	asked(2) // allowed once: asked again
	p.tmux("send-keys", "-t", "acpterm", "-l", "a")
	p.waitRaw("hello-again", 60*time.Second)
	idle()

	send("third")
	p.waitRaw("hello-third", 60*time.Second)
	idle()
	if n := strings.Count(p.raw(), question); n != 2 {
		t.Errorf("asked %d times, want 2: allowed for the run, the third connection must not be asked about", n)
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("the server was reached %d times, want 3", n)
	}
	p.tmux("send-keys", "-t", "acpterm", "C-d")
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("exit %d; the screen:\n%s", code, strings.Join(p.screen(), "\n"))
	}
}

// TestAskHostAgentAtTerminal: a confined agent's own connection to a host
// not on its list is asked about too, naming the agent itself (its proxy
// is its own), and "n" refuses it.
func TestAskHostAgentAtTerminal(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello-agent")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	host := "127.0.0.1:" + port
	p := startTmux(t, t.TempDir(), []string{"NO_COLOR=1", "TERM=tmux-256color", fakeAgentEnv + "=net-self"}, plainAcpterm(t),
		"run", "--approve-all", "--sandbox-agent", "--network", "proxy", "--", testExe(t))
	const prompt = "› "
	p.waitRaw(prompt, 60*time.Second)
	question := "acpterm: network: the agent itself (or a program it started) wants to connect to " + host
	for _, answer := range []string{"n", "y"} {
		p.tmux("send-keys", "-t", "acpterm", "-l", "curl -sSf --noproxy '' http://"+host+"/ || echo refused-$((6*7))")
		p.tmux("send-keys", "-t", "acpterm", "Enter")
		p.waitFor("the question about the agent's connection", 60*time.Second, func(_ []string, raw string) bool {
			return strings.Count(raw, question) == map[string]int{"n": 1, "y": 2}[answer]
		})
		p.tmux("send-keys", "-t", "acpterm", "-l", answer)
		want := map[string]string{"n": "refused-42", "y": "net-self: hello-agent"}[answer]
		p.waitRaw(want, 60*time.Second)
		p.waitFor("the prompt after the turn", 60*time.Second, func(screen []string, _ string) bool {
			return len(screen) > 0 && screen[len(screen)-1] == strings.TrimSpace(prompt)
		})
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the server was reached %d times, want 1 (refused, then allowed once)", n)
	}
	p.tmux("send-keys", "-t", "acpterm", "C-d")
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("exit %d; the screen:\n%s", code, strings.Join(p.screen(), "\n"))
	}
}

// TestAskHostRemoteAtTerminal: with --remote, the target's proxy puts a
// host that is not on the list to the person at this terminal, as a
// proxy here does, naming the command as the target ran it: "y" lets
// that connection through on the target, "n" refuses the next.
func TestAskHostRemoteAtTerminal(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	s := needSSHD(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello%s", strings.ReplaceAll(r.URL.Path, "/", "-"))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	host := "127.0.0.1:" + port
	bin := plainAcpterm(t)
	args := append([]string{"run", "--approve-all", "--network", "proxy"}, remoteArgs(t, s, targetDir(t))...)
	p := startTmux(t, t.TempDir(), []string{"NO_COLOR=1", "TERM=tmux-256color"}, bin, append(args, "--", bin, "agent", "--keep-going")...)
	const prompt = "› "
	p.waitRaw(prompt, 60*time.Second)
	question := "wants to connect to " + host + ", which is not on the allow-list"
	for i, answer := range []string{"y", "n"} {
		p.tmux("send-keys", "-t", "acpterm", "-l", "curl -sS --noproxy '' http://"+host+"/"+answer)
		p.tmux("send-keys", "-t", "acpterm", "Enter")
		p.waitFor(fmt.Sprintf("question %d", i+1), 60*time.Second, func(_ []string, raw string) bool {
			return strings.Count(raw, question) == i+1
		})
		if i == 0 {
			screen := strings.ReplaceAll(strings.Join(p.screen(), "\n"), "\n", "")
			if !strings.Contains(screen, "acpterm: network: the command sh -c 'curl -sS --noproxy ") {
				t.Errorf("the question does not name the command; the screen:\n%s", strings.Join(p.screen(), "\n"))
			}
		}
		p.tmux("send-keys", "-t", "acpterm", "-l", answer)
		p.waitRaw(map[string]string{"y": "hello-y", "n": "is not on the allow-list, and was refused"}[answer], 60*time.Second)
		p.waitFor("the prompt after the turn", 60*time.Second, func(screen []string, _ string) bool {
			return len(screen) > 0 && screen[len(screen)-1] == strings.TrimSpace(prompt)
		})
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the server was reached %d times, want 1", n)
	}
	p.tmux("send-keys", "-t", "acpterm", "C-d")
	if code := p.exited(30 * time.Second); code != 0 {
		t.Errorf("exit %d; the screen:\n%s", code, strings.Join(p.screen(), "\n"))
	}
}
