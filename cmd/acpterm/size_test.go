package main

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		err  bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"64KiB", 64 << 10, false},
		{"64kib", 64 << 10, false},
		{"64K", 64 << 10, false},
		{"64KB", 64000, false},
		{"16MiB", 16 << 20, false},
		{"16M", 16 << 20, false},
		{"2MB", 2e6, false},
		{"1GiB", 1 << 30, false},
		{"1.5MiB", 3 << 19, false},
		{" 12 B ", 12, false},
		{"18446744073709551615", 1<<64 - 1, false},
		{"18446744073709551616", 0, true},
		{"16777216TiB", 0, true},
		{"17179869184GiB", 0, true},
		{"", 0, true},
		{"MiB", 0, true},
		{"-1", 0, true},
		{"1e6", 0, true},
		{"0x10", 0, true},
		{"1_000", 0, true},
		{".5K", 0, true},
		{"NaN", 0, true},
		{"Inf", 0, true},
		{"lots", 0, true},
		{"5 apples", 0, true},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 1000: "1000", 4096: "4KiB", 16 << 20: "16MiB", 1 << 30: "1GiB", 1<<20 + 1: "1048577"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := parseSize(formatSize(n)); err != nil || back != n {
			t.Errorf("parseSize(formatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

// FuzzParseSize: no input panics, and what parses is a plain number with
// at most one known unit.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4096", "64KiB", "1.5MiB", "16M", "2MB", "", "1e6", "-1", "99999999999999999999GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(s, "+-eEx_") {
			t.Fatalf("parseSize(%q) = %d, want an error", s, n)
		}
		if back, err := parseSize(formatSize(n)); err != nil || back != n {
			t.Fatalf("round trip of %d: %d, %v", n, back, err)
		}
	})
}
