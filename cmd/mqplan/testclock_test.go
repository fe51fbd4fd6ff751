package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/coord"
)

// TestTestClockGuard: the clock hook is read only under the hidden switch
// MQPLAN_TEST_HOOKS=1, only for the shard it names, and a malformed
// offset under the switch is an error, never a silent normal run.
func TestTestClockGuard(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		shard int
		want  coord.TestClock
		err   string
	}{
		{"no variables", nil, 1, coord.TestClock{}, ""},
		{"offset without the switch", map[string]string{testOffsetVar: "1:+7ms", testNoCorrectVar: "1"}, 1, coord.TestClock{}, ""},
		{"switch not 1", map[string]string{testHooksVar: "yes", testOffsetVar: "1:+7ms"}, 1, coord.TestClock{}, ""},
		{"the named shard", map[string]string{testHooksVar: "1", testOffsetVar: "1:+7ms"}, 1, coord.TestClock{Skew: 7 * time.Millisecond}, ""},
		{"another shard", map[string]string{testHooksVar: "1", testOffsetVar: "1:+7ms"}, 0, coord.TestClock{}, ""},
		{"behind, uncorrected", map[string]string{testHooksVar: "1", testOffsetVar: "0:-3ms", testNoCorrectVar: "1"}, 0,
			coord.TestClock{Skew: -3 * time.Millisecond, NoCorrection: true}, ""},
		{"malformed", map[string]string{testHooksVar: "1", testOffsetVar: "7ms"}, 0, coord.TestClock{}, "want SHARD:DURATION"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{lookupEnv: func(k string) (string, bool) { v, ok := tt.vars[k]; return v, ok }}
			got, err := testClock(e, tt.shard)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("testClock = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
