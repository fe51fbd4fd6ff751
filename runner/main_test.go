package runner

import (
	"os"
	"testing"

	"github.com/mqplan/mqplan/internal/testparallel"
)

// TestMain lets at least four of the package's parallel tests run at
// once: those are runs against a broker that mostly wait on a timeline.
// The tests whose claims are timings or allocation counts stay
// sequential, and go test runs every sequential test before any
// parallel one.
func TestMain(m *testing.M) {
	testparallel.AtLeast(4)
	os.Exit(m.Run())
}
