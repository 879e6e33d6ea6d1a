package remote

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/sandbox/netproxy"
)

// TestSandboxArgs: a policy becomes the exec server's flags, and what a
// target cannot be given is refused by name rather than dropped.
func TestSandboxArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *sandbox.Policy
		want []string
		bad  string
	}{
		{"nil", nil, []string{"--sandbox", "off", "--network", "allow"}, ""},
		{"workspace", &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Network: sandbox.DenyNetwork, Writable: []string{"/srv/a", "/srv/b"},
			WritableGit: true, WritableConfig: true},
			[]string{"--sandbox", "workspace-write", "--network", "deny", "--writable", "/srv/a", "--writable", "/srv/b", "--writable-git", "--writable-config"}, ""},
		{"read-only", &sandbox.Policy{Mode: sandbox.ReadOnly, BestEffort: true}, []string{"--sandbox", "read-only", "--network", "allow"}, ""},
		{"caches", &sandbox.Policy{Caches: []string{"/c"}}, nil, "Caches"},
		{"cache dir", &sandbox.Policy{CacheDir: "/c"}, nil, "CacheDir"},
		{"protected", &sandbox.Policy{Protected: []string{"/p"}}, nil, "Protected"},
		{"temp dir", &sandbox.Policy{TempDir: "/t"}, nil, "TempDir"},
		{"readable", &sandbox.Policy{Mode: sandbox.ReadOnly, Readable: []string{"/home/u/.aws"}},
			[]string{"--sandbox", "read-only", "--network", "allow", "--readable", "/home/u/.aws"}, ""},
		{"hidden", &sandbox.Policy{Hidden: []string{"/home/me/.ssh"}}, nil, "Hidden"},
		{"hidden, none", &sandbox.Policy{Hidden: []string{}}, nil, "Hidden"},
		{"redacted", &sandbox.Policy{Redacted: []string{"/home/me/.npmrc"}}, nil, "Redacted"},
		{"host list", &sandbox.Policy{Mode: sandbox.ReadOnly, Network: sandbox.ProxyNetwork, AllowHosts: []string{"api.example.com", "127.0.0.1:8080"}},
			[]string{"--sandbox", "read-only", "--network", "proxy", "--allow-host", "api.example.com", "--allow-host", "127.0.0.1:8080"}, ""},
		{"proxy hooks", &sandbox.Policy{Network: sandbox.ProxyNetwork, Proxy: &netproxy.Options{}}, nil, "Proxy"},
	} {
		got, err := SandboxArgs(tc.p)
		if tc.bad != "" {
			if !errors.Is(err, ErrSandboxOption) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%s: %v, want ErrSandboxOption naming %s", tc.name, err, tc.bad)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestCheckSandbox: a target that cannot enforce the policy fails unless
// the policy accepts less, as a local create does; one that cannot set it
// up at all, or runs another, always fails.
func TestCheckSandbox(t *testing.T) {
	ww := sandbox.Policy{Mode: sandbox.WorkspaceWrite}
	less := ww
	less.WithoutMountNamespace = true
	best := ww
	best.BestEffort = true
	hello := func(mode, network, errText string, missing ...string) HelloResponse {
		return HelloResponse{Sandbox: SandboxInfo{Mode: mode, Network: network, Error: errText, Missing: missing}}
	}
	for _, tc := range []struct {
		name string
		h    HelloResponse
		p    *sandbox.Policy
		fail string
	}{
		{"enforced", hello("workspace-write", "allow", ""), &ww, ""},
		{"unconfined", hello("off", "allow", ""), nil, ""},
		{"missing, not accepted", hello("workspace-write", "allow", "", "no mount namespace"), &ww, "missing: no mount namespace"},
		{"missing, WithoutMountNamespace", hello("workspace-write", "allow", "", "no mount namespace"), &less, ""},
		{"missing, BestEffort", hello("workspace-write", "allow", "", "no mount namespace"), &best, ""},
		{"cannot be set up", hello("workspace-write", "deny", "no network namespace"), &best, "no network namespace"},
		{"another mode", hello("workspace-write", "allow", ""), nil, "not the off and allow asked for"},
		{"another network", hello("workspace-write", "allow", ""), &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Network: sandbox.DenyNetwork}, "--network allow"},
	} {
		err := checkSandbox(tc.h, tc.p)
		var se *SandboxError
		switch {
		case tc.fail == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.fail != "" && (!errors.As(err, &se) || !strings.Contains(se.Reason, tc.fail)):
			t.Errorf("%s: %v, want a SandboxError saying %q", tc.name, err, tc.fail)
		}
	}
}
