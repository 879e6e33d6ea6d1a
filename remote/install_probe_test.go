package remote

import (
	"path"
	"strings"
	"testing"
)

const (
	sumA = "673329d3b19fa8e325b2822bbb9116daf5c4eb4cc95c529e2d77e8cbf4ce2e60"
	sumB = "407aa3ae30ac32fe6bf53e2d35d8ce08eab1ca667a577cbe6e4f2309ebf9d0a3"
)

// TestParseProbe: the probe's own lines are read; a greeting before them
// is skipped; a copy is listed only with a name of 16 hex digits, a size
// and a full hash (or "-"); a second uname, dir or hash line (a greeting
// that imitates one) is an error rather than a choice.
func TestParseProbe(t *testing.T) {
	good := "uname=Linux x86_64\ndir=/home/u/.local/share/acpterm/exec-server\nhash=/usr/bin/sha256sum\n"
	for _, tc := range []struct {
		name, out string
		want      map[string]copyInfo // nil: an error
		hashes    bool
	}{
		{"plain", good + "have=673329d3b19fa8e3 9600000 " + sumA + "\n",
			map[string]copyInfo{"673329d3b19fa8e3": {9600000, sumA}}, true},
		{"greeting first", "Welcome!\nLast login: today\n" + good, map[string]copyInfo{}, true},
		{"no hash tool", strings.Replace(good, "hash=/usr/bin/sha256sum", "hash=", 1) + "have=673329d3b19fa8e3 12 -\n",
			map[string]copyInfo{"673329d3b19fa8e3": {12, ""}}, false},
		{"names and shapes refused", good +
			"have=../../../etc 12 " + sumA + "\n" +
			"have=673329D3B19FA8E3 12 " + sumA + "\n" +
			"have=673329d3b19fa8e 12 " + sumA + "\n" +
			"have=673329d3b19fa8e3 -12 " + sumA + "\n" +
			"have=673329d3b19fa8e3 12 " + sumA[:63] + "\n" +
			"have=673329d3b19fa8e3  12 " + sumA + "\n" +
			"have=673329d3b19fa8e3 12 " + sumA + " extra\n" +
			"have=fedcba9876543210 12 " + sumB + "\x1b[2J\n" +
			"have=0123456789abcdef 12 " + sumB + "\n",
			map[string]copyInfo{"0123456789abcdef": {12, sumB}}, true},
		{"second dir", good + "dir=/tmp/evil\n", nil, false},
		{"dir imitated before", "dir=/tmp/evil\n" + good, nil, false},
		{"relative dir", strings.Replace(good, "dir=/home", "dir=home", 1), nil, false},
		{"dir not clean", strings.Replace(good, "acpterm/exec-server", "acpterm/../exec-server", 1), nil, false},
		{"no hash line", "uname=Linux x86_64\ndir=/d\n", nil, false},
		{"no uname", "dir=/d\nhash=\n", nil, false},
		{"too long", good + strings.Repeat("x\n", maxProbeLines), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseProbe(tc.out)
			if tc.want == nil {
				if err == nil {
					t.Errorf("parsed %+v, want an error", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.hashes != tc.hashes || len(p.have) != len(tc.want) {
				t.Errorf("hashes %v, have %v; want %v, %v", p.hashes, p.have, tc.hashes, tc.want)
			}
			for k, v := range tc.want {
				if p.have[k] != v {
					t.Errorf("have[%s] = %+v, want %+v", k, p.have[k], v)
				}
			}
		})
	}
}

// FuzzParseProbe: whatever the target answers, parseProbe returns an
// error or a probe whose every part is of the expected shape: an
// absolute, clean, printable directory; at most maxCopies copies, each
// named by 16 hex digits, with a size and a hash of 64 hex digits or
// none.
func FuzzParseProbe(f *testing.F) {
	f.Add("uname=Linux x86_64\ndir=/d\nhash=/usr/bin/sha256sum\nhave=673329d3b19fa8e3 12 " + sumA + "\n")
	f.Add("Welcome\nuname=Darwin arm64\ndir=/Users/u/.local/share/acpterm/exec-server\nhash=\nhave=0123456789abcdef 1 -\n")
	f.Add("uname=Linux x86_64\ndir=/d/../e\nhash=x\n")
	f.Add("uname=Linux x86_64\ndir=/d\x1b]0;x\x07\nhash=x\n")
	f.Fuzz(func(t *testing.T, out string) {
		p, err := parseProbe(out)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p.dir, "/") || path.Clean(p.dir) != p.dir || !printable(p.dir) {
			t.Errorf("dir %q", p.dir)
		}
		if p.goos == "" || p.goarch == "" {
			t.Errorf("platform %q/%q", p.goos, p.goarch)
		}
		if len(p.have) > maxCopies {
			t.Errorf("%d copies", len(p.have))
		}
		for name, c := range p.have {
			if !isHex(name, 16) || c.size < 0 || c.sum != "" && !isHex(c.sum, 64) {
				t.Errorf("copy %q: %+v", name, c)
			}
		}
	})
}
