package render

import "testing"

func TestAmount(t *testing.T) {
	for x, want := range map[float64]string{
		0.00028000000000000003: "0.00028",
		1.5:                    "1.5",
		2:                      "2",
		0:                      "0",
		0.0000001:              "0",
		-0.0000001:             "0",
		12345.678901234:        "12345.678901",
	} {
		if got := amount(x); got != want {
			t.Errorf("amount(%v) = %q, want %q", x, got, want)
		}
	}
}
