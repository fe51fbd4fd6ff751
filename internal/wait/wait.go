// Package wait is how tests wait for what other goroutines do: poll a
// condition until it holds, with a deadline, so that no test sleeps to
// synchronise and none hangs when the awaited thing never happens. Tests
// only import it.
package wait

import (
	"testing"
	"time"
)

// Timeout bounds every wait: long enough for a loaded CI machine running
// the race detector, short enough that a hung wait fails the test with its
// reason rather than at the test binary's own timeout.
const Timeout = 10 * time.Second

// pollEvery is how often a condition is polled: small next to any wait
// a test makes, large enough not to load the machine.
const pollEvery = 2 * time.Millisecond

// Until polls cond, a condition updated by other goroutines, until it
// holds, and fails the test ("timed out waiting for what") after Timeout.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	UntilWithin(t, Timeout, pollEvery, what, cond)
}

// UntilWithin is Until with its own deadline and polling interval, for
// the rare wait on something slower than Timeout by its nature (a broker's
// retained message that expires after a minute) whose condition is costly
// to poll (a connection each time).
func UntilWithin(t testing.TB, limit, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
