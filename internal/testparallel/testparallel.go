// Package testparallel owns one setting of the test binaries: how many
// parallel tests run at once. go test's default is GOMAXPROCS (2 on the
// project's machines), right for tests that use a CPU throughout, too few
// for tests that mostly wait on a broker or a timeline, which is what
// most of mqplan's end-to-end tests do.
package testparallel

import (
	"flag"
	"strconv"
)

// AtLeast raises -test.parallel to n unless the command line gave it.
// Call it from TestMain before m.Run; it parses the flags.
func AtLeast(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	p := flag.Lookup("test.parallel")
	if set || p == nil {
		return
	}
	if cur, err := strconv.Atoi(p.Value.String()); err == nil && cur < n {
		_ = p.Value.Set(strconv.Itoa(n))
	}
}
