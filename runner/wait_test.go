package runner

import (
	"testing"
	"time"
)

// The waits of runner's tests. They came from the broker's tests (hence
// "bt") when the embedded broker moved to package broker, which keeps its
// own copies: runner's tests of the connection and the hot paths bound
// their waits with them too.

// btTimeout bounds every wait in these tests.
const btTimeout = 10 * time.Second

// btWaitFor polls a condition updated by other goroutines until it holds,
// and fails the test after btTimeout.
func btWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(btTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
