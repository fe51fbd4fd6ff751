package testparallel

import (
	"flag"
	"testing"
)

// TestAtLeastRaisesTheDefault: the binary runs with go test's default
// -test.parallel here (this package's TestMain raises it), so it reads 4.
func TestAtLeastRaisesTheDefault(t *testing.T) {
	if got := flag.Lookup("test.parallel").Value.String(); got != "4" && !given {
		t.Errorf("-test.parallel %s after AtLeast(4), want 4", got)
	}
}

// given is whether the command line set -test.parallel itself.
var given bool

func TestMain(m *testing.M) {
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		// Lower it first, so that raising it is what is seen on any
		// machine, whatever GOMAXPROCS is.
		_ = flag.Lookup("test.parallel").Value.Set("1")
	}
	AtLeast(4)
	m.Run()
}
