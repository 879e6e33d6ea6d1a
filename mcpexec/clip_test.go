package mcpexec

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		parts []string
		gap   int // bytes lost before the last part
		want  string
		trunc bool
	}{
		{"fits", 100, []string{"hello\n", "world\n"}, 0, "hello\nworld\n", false},
		{"empty", 100, nil, 0, "", false},
		{"head and tail", 8, []string{"aaaa", "bbbb", "cccc", "dddd"}, 0, "aaaa\n…2 tokens truncated…\ndddd", true},
		{"one big chunk", 8, []string{"0123456789abcdef"}, 0, "0123\n…2 tokens truncated…\ncdef", true},
		{"utf-8 kept whole", 8, []string{"ééééé", "ééééé"}, 0, "éé\n…3 tokens truncated…\néé", true},
		{"gap", 100, []string{"start\n", "end\n"}, 50, "start\n…13 tokens truncated… (50 bytes were never read: the command wrote faster than it was polled)\nend\n", true},
		{"invalid utf-8", 100, []string{"a\xffb"}, 0, "a\uFFFDb", false},
		{"zero budget", 0, []string{"abc"}, 0, "…1 tokens truncated…\n", true},
	} {
		c := newClip(tc.limit)
		for i, p := range tc.parts {
			if i == len(tc.parts)-1 {
				c.gap(uint64(tc.gap))
			}
			c.add([]byte(p))
		}
		if got := c.text(); got != tc.want || c.truncated() != tc.trunc {
			t.Errorf("%s: text %q truncated=%v, want %q %v", tc.name, got, c.truncated(), tc.want, tc.trunc)
		}
	}
}

// A command's output far beyond the budget costs memory of the budget.
func TestClipMemoryBounded(t *testing.T) {
	c := newClip(1000)
	chunk := []byte(strings.Repeat("x", 333))
	for range 100000 {
		c.add(chunk)
	}
	if n := cap(c.head) + cap(c.tail); n > 4*1000 {
		t.Errorf("%d bytes of buffers for a budget of 1000", n)
	}
	if c.total != 33300000 {
		t.Errorf("total %d", c.total)
	}
}
