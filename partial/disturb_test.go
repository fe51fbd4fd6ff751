package partial

import (
	"testing"
	"time"

	"github.com/mqplan/mqplan/stats"
)

// TestMergeKeepsTheWorstShardsDisturbance: each shard measures its own
// disturbance; the merged second carries the worst shard's, so that a
// second is disturbed when one shard was, and a shard that measured
// nothing changes nothing.
func TestMergeKeepsTheWorstShardsDisturbance(t *testing.T) {
	cases := []struct {
		name string
		a, b stats.GenSecond
		want stats.GenSecond
	}{
		{"one shard starved", stats.GenSecond{Sampled: true, Wait: 900 * time.Millisecond, Delay: 2 * time.Millisecond, Busy: 0.2},
			stats.GenSecond{Sampled: true, Wait: 10 * time.Millisecond, Busy: 0.95, Pressure: time.Second, HasPressure: true},
			stats.GenSecond{Sampled: true, Wait: 900 * time.Millisecond, Delay: 2 * time.Millisecond, Busy: 0.95, Pressure: time.Second, HasPressure: true}},
		{"one shard not measured", stats.GenSecond{}, stats.GenSecond{Sampled: true, Wait: 10 * time.Millisecond, Busy: 0.1},
			stats.GenSecond{Sampled: true, Wait: 10 * time.Millisecond, Busy: 0.1}},
		{"neither measured", stats.GenSecond{}, stats.GenSecond{}, stats.GenSecond{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sa, sb := shardStats(10, 0, nil), shardStats(0, 10, nil)
			sa.Timeline[0].Gen, sb.Timeline[0].Gen = tc.a, tc.b
			m, err := Merge([]*File{part(t, sa, 0, 2, nil), part(t, sb, 1, 2, nil)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Stats.Timeline[0].Gen; got != tc.want {
				t.Fatalf("merged %+v, want %+v", got, tc.want)
			}
		})
	}
}
