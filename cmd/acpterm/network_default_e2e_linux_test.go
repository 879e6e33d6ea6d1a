//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgentHostsByDefault: with no network flag, a confined agent with a
// hosts list (its agents.json entry's allowHosts: its API, a loopback
// server here) is limited to it, and its commands get none of it;
// --network allow gives the agent the host's network back.
func TestAgentHostsByDefault(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the model answers") }))
	t.Cleanup(api.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "another host answers") }))
	t.Cleanup(other.Close)
	_, port := mustSplit(t, api.Listener.Addr().String())
	_, oport := mustSplit(t, other.Listener.Addr().String())
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
	// The other server through the proxy (--noproxy '' sends even a
	// loopback address there), then directly.
	script := "curl -sS http://127.0.0.1:" + port + "/; echo; curl -sS --noproxy '' http://127.0.0.1:" + oport + "/; echo; curl -sS http://127.0.0.1:" + oport + "/ || echo other-unreached"
	self := opts{plain: true, env: []string{"XDG_CONFIG_HOME=" + cfgHome, fakeAgentEnv + "=net-self"}}

	r := acpterm(t, self, "run", "--approve-all", "-p", script, "selfnet")
	if r.code != 0 {
		t.Fatalf("the agent: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "the agent's stdout", r.stdout, "net-self: the model answers", "other-unreached", "acpterm proxy: connection to 127.0.0.1:"+oport+" refused")
	mustContain(t, "stderr", r.stderr, "network limited to no host through acpterm's proxy (the agent also reaches 127.0.0.1:"+port+"), by default for a confined agent",
		"refused a sandboxed connection to 127.0.0.1:"+oport, "--allow-host 127.0.0.1:"+oport+" lets it through")
	if strings.Contains(r.stdout, "another host answers") {
		t.Errorf("the agent reached a host not on its list:\n%s", r.stdout)
	}

	r = acpterm(t, opts{plain: true, env: []string{"XDG_CONFIG_HOME=" + cfgHome}}, "run", "--approve-all", "-p", "curl -sS http://127.0.0.1:"+port+"/", "cmdnet")
	if r.code != 0 {
		t.Fatalf("its command: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "the model answers") {
		t.Errorf("a command reached the agent's API host:\n%s", r.stdout)
	}
	mustContain(t, "its command's output", r.stdout, "FAIL curl")

	r = acpterm(t, self, "run", "--approve-all", "--network", "allow", "-p", "curl -sS http://127.0.0.1:"+oport+"/", "selfnet")
	if r.code != 0 {
		t.Fatalf("--network allow: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "--network allow: the agent's stdout", r.stdout, "net-self: another host answers")
	if strings.Contains(r.stderr, "network limited") {
		t.Errorf("--network allow: the confinement line still limits the network:\n%s", r.stderr)
	}
}

// TestAskHostNoTerminal: with nobody to ask (-p, no terminal), a host not
// on the list is refused at once, reported as network_denied with the
// flag that lets it through.
func TestAskHostNoTerminal(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") }))
	t.Cleanup(srv.Close)
	_, port := mustSplit(t, srv.Listener.Addr().String())
	start := time.Now()
	r := acpterm(t, opts{plain: true}, "run", "--format", "json", "--approve-all", "--network", "proxy",
		"-p", "curl -sS --noproxy '' http://127.0.0.1:"+port+"/\ncurl -sS --noproxy '' http://unlisted.invalid:8080/", "--", plainAcpterm(t), "agent", "--keep-going")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "reached") {
		t.Errorf("the host not on the list was reached:\n%s", r.stdout)
	}
	// Refused at once: well within the time a question would wait.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v", d)
	}
	hints := map[string]string{}
	for _, e := range ofKind(parseEvents(t, r.stdout), "network_denied") {
		hints[e.str("host")] = e.str("hint")
	}
	if hints["127.0.0.1"] != "--allow-host 127.0.0.1:"+port || hints["unlisted.invalid"] != "--allow-host unlisted.invalid" {
		t.Errorf("network_denied hints %v", hints)
	}
}
