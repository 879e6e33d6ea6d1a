package proctest

import (
	"flag"
	"strconv"
)

// RaiseParallel lets n parallel tests run at once instead of -parallel's
// default (GOMAXPROCS), unless -parallel was given: for a package whose
// tests mostly wait on child processes and time limits, where one test per
// CPU leaves the CPUs idle. Call it in TestMain, before m.Run.
func RaiseParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
