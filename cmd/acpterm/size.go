package main

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes parseSize accepts. The binary ones (K, KiB,
// M, MiB, G, GiB) count in 1024s; KB, MB and GB are the decimal SI units.
// Matching ignores case.
var sizeUnits = []struct {
	suffix string
	mult   uint64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

// parseSize parses a byte count such as 4096, 64KiB, 1.5MiB or 16M.
func parseSize(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, errors.New("empty size")
	}
	mult := uint64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	whole, frac, _ := strings.Cut(t, ".")
	if !isDigits(whole) || (frac != "" && !isDigits(frac)) {
		return 0, fmt.Errorf("invalid size %q (use e.g. 4096, 64KiB, 16MiB)", s)
	}
	// Exact decimal arithmetic: 1.5MiB is 1572864 bytes, and a size that
	// is not a whole number of bytes (1.5, 0.1K) is refused, not rounded.
	r, ok := new(big.Rat).SetString(whole + "." + frac + "0")
	if !ok {
		return 0, fmt.Errorf("invalid size %q (use e.g. 4096, 64KiB, 16MiB)", s)
	}
	r.Mul(r, new(big.Rat).SetUint64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	if !r.Num().IsUint64() {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return r.Num().Uint64(), nil
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// formatSize writes a size back in the largest binary unit that divides it.
func formatSize(n uint64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n != 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n != 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatUint(n, 10)
}

// sizeFlag is a flag.Value for byte sizes.
type sizeFlag struct{ n *uint64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return formatSize(*f.n)
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

// listFlag is a repeatable string flag.
type listFlag struct{ v *[]string }

func (f listFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strings.Join(*f.v, ",")
}

func (f listFlag) Set(s string) error {
	*f.v = append(*f.v, s)
	return nil
}
