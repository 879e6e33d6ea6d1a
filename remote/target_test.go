package remote_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/remote"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in   string
		want remote.Target
	}{
		{"ssh://host", remote.Target{Kind: remote.SSH, Host: "host"}},
		{"ssh://me@dev.example.com:2222/srv/app", remote.Target{Kind: remote.SSH, User: "me", Host: "dev.example.com", Port: 2222, Dir: "/srv/app"}},
		{"ssh://h/~/proj/", remote.Target{Kind: remote.SSH, Host: "h", Dir: "~/proj"}},
		{"ssh://h/~", remote.Target{Kind: remote.SSH, Host: "h", Dir: "~"}},
		{"ssh://[::1]:22/x", remote.Target{Kind: remote.SSH, Host: "::1", Port: 22, Dir: "/x"}},
		{"ssh://my_alias", remote.Target{Kind: remote.SSH, Host: "my_alias"}},
		{"podman://web/app", remote.Target{Kind: remote.Podman, Container: "web", Dir: "/app"}},
		{"docker://3f2a1b", remote.Target{Kind: remote.Docker, Container: "3f2a1b"}},
		{"k8s://default/web-0", remote.Target{Kind: remote.Kubernetes, Namespace: "default", Pod: "web-0"}},
		{"k8s://default/web-0/app:/srv", remote.Target{Kind: remote.Kubernetes, Namespace: "default", Pod: "web-0", Container: "app", Dir: "/srv"}},
		{"k8s://kind-dev/default/web-0/:~/w", remote.Target{Kind: remote.Kubernetes, Context: "kind-dev", Namespace: "default", Pod: "web-0", Dir: "~/w"}},
		{"k8s://ctx/ns/pod/c", remote.Target{Kind: remote.Kubernetes, Context: "ctx", Namespace: "ns", Pod: "pod", Container: "c"}},
	}
	for _, tt := range tests {
		got, err := remote.ParseTarget(tt.in)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseTarget(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{
		"", "host", "ftp://h", "ssh://", "ssh://-oProxyCommand=x", "ssh://-l", "ssh://u@", "ssh://@h",
		"ssh://h:0", "ssh://h:65536", "ssh://h:x", "ssh://h:", "ssh://h:+22", "ssh://[::1", "ssh://[nope]:2",
		"ssh://h/a b", "ssh://h/a\nb", "ssh://h\x00", "ssh://ho$t", "ssh://-u@h",
		"podman://", "podman://-rm", "podman://a b", "docker://.x", "docker://x;y",
		"k8s://pod", "k8s://NS/pod", "k8s://ns/-pod", "k8s://ns/pod:rel", "k8s://a/b/c/d/e", "k8s://-ctx/ns/pod/",
		"k8s://ns/pod/:/x", "k8s://ns/pod:", "k8s://ns/pod:~root",
	} {
		if got, err := remote.ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) = %+v, want an error", bad, got)
		} else if !errors.Is(err, remote.ErrTarget) {
			t.Errorf("ParseTarget(%q): %v does not wrap ErrTarget", bad, err)
		}
	}
}

// FuzzParseTarget: a parsed target writes back to a string that parses to
// the same target, and nothing in it can be taken for an option or hold
// whitespace or control characters.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"ssh://me@h:22/srv", "ssh://[::1]/~", "podman://web/app", "docker://x", "k8s://ctx/ns/pod/:/d", "k8s://ns/p/c:~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := remote.ParseTarget(s)
		if err != nil {
			return
		}
		again, err := remote.ParseTarget(tg.String())
		if err != nil || !reflect.DeepEqual(again, tg) {
			t.Fatalf("%q parsed to %+v, written %q, which parses to %+v (%v)", s, tg, tg.String(), again, err)
		}
		for _, part := range []string{tg.User, tg.Host, tg.Container, tg.Context, tg.Namespace, tg.Pod, tg.Dir} {
			if strings.HasPrefix(part, "-") || strings.ContainsFunc(part, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				t.Fatalf("%q: part %q", s, part)
			}
		}
		if _, err := remote.Command(tg, nil); err != nil {
			t.Fatalf("Command(%+v): %v", tg, err)
		}
	})
}

func TestCommandQuotesForTheRemoteShell(t *testing.T) {
	tg, err := remote.ParseTarget("ssh://me@h:2200/srv/it's here")
	if err == nil {
		t.Fatalf("a space in the dir parsed: %+v", tg)
	}
	tg = remote.Target{Kind: remote.SSH, Host: "h", Port: 2200, User: "me", Dir: "/srv/it's $HOME"}
	cmd, err := remote.Command(tg, &remote.CommandOptions{Binary: "/opt/a b/acpterm", ServerArgs: []string{"--sandbox", "read-only"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh", "-T", "-l", "me", "-p", "2200", "--", "h",
		`exec '/opt/a b/acpterm' exec-server --cwd '/srv/it'\''s $HOME' --sandbox read-only`}
	if !reflect.DeepEqual(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	k, _ := remote.ParseTarget("k8s://ctx/ns/pod/c:/w")
	cmd, _ = remote.Command(k, nil)
	want = []string{"kubectl", "--context", "ctx", "exec", "-i", "-n", "ns", "pod", "-c", "c", "--", "acpterm", "exec-server", "--cwd", "/w"}
	if !reflect.DeepEqual(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
	p, _ := remote.ParseTarget("podman://web")
	cmd, _ = remote.Command(p, &remote.CommandOptions{Binary: "/tmp/acpterm"})
	want = []string{"podman", "exec", "-i", "web", "/tmp/acpterm", "exec-server"}
	if !reflect.DeepEqual(cmd.Args, want) {
		t.Errorf("args\n%q\nwant\n%q", cmd.Args, want)
	}
}

// FuzzShellQuote: what ShellQuote makes, sh reads back as the one word.
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "a b", "it's", `$(x)`, "\\", "a'b'c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := remote.ShellQuote(s)
		if s == "" && q != "''" {
			t.Fatalf("empty word quoted as %q", q)
		}
		// Inside the quotes nothing but the quote itself is special.
		inner := strings.ReplaceAll(q, `'\''`, "")
		if strings.HasPrefix(inner, "'") {
			inner = strings.TrimSuffix(strings.TrimPrefix(inner, "'"), "'")
			if strings.Contains(inner, "'") {
				t.Fatalf("%q: a stray quote in %q", s, q)
			}
		} else if q != s {
			t.Fatalf("%q left unquoted as %q", s, q)
		}
	})
}
