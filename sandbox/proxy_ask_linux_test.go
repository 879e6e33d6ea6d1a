package sandbox

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// TestProxyAskNamesCommand: a command's connection to a host not on the
// list is put to the Asker, naming the command as acpterm labelled it
// (Cmd.ProxyClient for a spawner's commands, which share a proxy and
// tell themselves apart by the credentials in their proxy URLs;
// Policy.ProxyClient for a command wrapped with a proxy of its own),
// over HTTP and SOCKS5 alike; the answer lets it through.
func TestProxyAskNamesCommand(t *testing.T) {
	need(t, true)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	w := newProxyWorld(t)
	var mu sync.Mutex
	var asked []string
	p := w.policy("api.example.com")
	p.Proxy.Ask = &netproxy.Asker{Decide: func(_ context.Context, q netproxy.Question) netproxy.Decision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q.Client+" -> "+q.Target.String())
		return netproxy.AllowOnce
	}}
	script := "PATH=$(dirname " + curl + "):$PATH; curl -sS http://other.example.com:$1/; echo; unset http_proxy HTTP_PROXY; curl -sS http://other.example.com:$1/"
	want := []string{"A -> other.example.com:" + w.port, "A -> other.example.com:" + w.port}

	t.Run("spawner", func(t *testing.T) {
		asked = nil
		s := newSpawner(t, p)
		for _, who := range []string{"A", "B"} {
			c, out := spawn(t, s, &Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", script, "sh", w.port}, ProxyClient: who})
			text := <-out
			if _, err := c.Wait(); err != nil {
				t.Fatal(err)
			}
			c.Release()
			if strings.Count(text, "hello other.example.com:") != 2 {
				t.Errorf("%s: output %q, want two answers", who, text)
			}
		}
		wantAll := append(want, "B -> other.example.com:"+w.port, "B -> other.example.com:"+w.port)
		if strings.Join(asked, "\n") != strings.Join(wantAll, "\n") {
			t.Errorf("asked:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(wantAll, "\n"))
		}
	})
	t.Run("wrap", func(t *testing.T) {
		asked = nil
		pa := *p
		pa.ProxyClient = "A"
		out, code := box{}.sh(t, &pa, "", script, w.port)
		if code != 0 || strings.Count(out, "hello other.example.com:") != 2 {
			t.Errorf("status %d, output %q", code, out)
		}
		if strings.Join(asked, "\n") != strings.Join(want, "\n") {
			t.Errorf("asked %q, want %q", asked, want)
		}
	})
}
