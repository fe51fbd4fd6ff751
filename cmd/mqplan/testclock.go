package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/coord"
	"github.com/mqplan/mqplan/partial"
)

// The test-only clock hook of a sharded run (coord.TestClock): it
// distorts one shard's clock so that tests can check how skew is
// measured, corrected and reported. It is read only when the hidden
// switch MQPLAN_TEST_HOOKS is "1", is named in no help or doc a user
// reads, and a run that uses it says so on standard error and in its
// part's clock source, which every report of the run shows. Its
// variables, given to every shard (the --workers children inherit them):
//
//	MQPLAN_TEST_CLOCK_OFFSET=I:D   shard I's wall clock reads D ahead (D a Go duration, +7ms, -3ms)
//	MQPLAN_TEST_CLOCK_NO_CORRECTION=1  shard I does not apply the offset it measured
const (
	testHooksVar     = "MQPLAN_TEST_HOOKS"
	testOffsetVar    = "MQPLAN_TEST_CLOCK_OFFSET"
	testNoCorrectVar = "MQPLAN_TEST_CLOCK_NO_CORRECTION"
)

// testClock is shard index's clock hook from the environment: none unless
// the hidden switch is on and the offset names this shard. A malformed
// offset under the switch is an error (a test that meant to skew a clock
// must not silently run without).
func testClock(e *env, index int) (coord.TestClock, error) {
	if v, _ := e.lookupEnv(testHooksVar); v != "1" {
		return coord.TestClock{}, nil
	}
	v, ok := e.lookupEnv(testOffsetVar)
	if !ok {
		return coord.TestClock{}, nil
	}
	a, b, ok := strings.Cut(v, ":")
	i, err := strconv.Atoi(a)
	var d time.Duration
	if ok && err == nil {
		d, err = time.ParseDuration(strings.TrimPrefix(b, "+"))
	}
	if !ok || err != nil {
		return coord.TestClock{}, fmt.Errorf("%s=%q: want SHARD:DURATION, e.g. 1:+7ms", testOffsetVar, v)
	}
	if i != index {
		return coord.TestClock{}, nil
	}
	nc, _ := e.lookupEnv(testNoCorrectVar)
	return coord.TestClock{Skew: d, NoCorrection: nc == "1"}, nil
}

// shardClock is a shard's partial.Clock: the common epoch and publish
// start, the offset and its uncertainty from the join (source "same
// host" when the shard read the coordinator's clocks), the drift sampled
// again after the run (left out when the sample failed: unknown), the
// host's NTP status, and the test hook when one was used.
func shardClock(e *env, sh *coord.Shard, tc coord.TestClock, epoch, pubStart int64, index, n int) partial.Clock {
	theta, delta := sh.Clock()
	c := partial.Clock{EpochWallNS: epoch, PubStartWallNS: pubStart, OffsetNS: int64(theta), UncertaintyNS: int64(delta), Source: "coordinator"}
	if sh.SameHost() {
		c.Source = partial.SameHost
	}
	if s := tc.String(); s != "" {
		c.Source += " (" + s + ")"
	}
	if drift, d, err := sh.Resample(10 * time.Second); err == nil {
		v := int64(drift)
		c.DriftNS, c.DriftUncertaintyNS = &v, int64(d)
	} else {
		fmt.Fprintf(e.stderr, "mqplan: shard %d/%d: %v: its clock drift is unknown\n", index, n, err)
	}
	if ntp := coord.NTP(); ntp.Known {
		c.NTP = &partial.NTP{Synced: ntp.Synced, MaxErrorNS: int64(ntp.MaxError), EstErrorNS: int64(ntp.EstError)}
	}
	return c
}
