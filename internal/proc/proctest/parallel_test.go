package proctest

import (
	"flag"
	"testing"
)

func TestRaiseParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	defer f.Value.Set(before)
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	RaiseParallel(97)
	want := "97"
	if given {
		want = before // -parallel on the command line wins
	}
	if got := f.Value.String(); got != want {
		t.Errorf("-parallel is %s after RaiseParallel(97), want %s", got, want)
	}
}
