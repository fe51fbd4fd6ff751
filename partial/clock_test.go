package partial

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// clockPart is shard i of 2's part whose subscriber received from shard
// `from` (cross-shard when from != i, its latencies in LatencyCross too),
// with the clock figures a shard writes; old leaves them out, as an older
// mqplan did.
func clockPart(t *testing.T, i, from int, offset, drift time.Duration, old bool) *File {
	t.Helper()
	st := shardStats(10, 10, []int64{100, 900})
	if from != i {
		st.Phases[phase.Steady].Groups[0].LatencyCross = hist(100, 900)
		stats.FinishPhases(st.Phases, nil)
	}
	if !old {
		st.Clock = &stats.Clock{Pairs: []stats.ShardPair{{From: 0, To: i}, {From: 1, To: i}}}
		st.Clock.Pairs[from] = stats.ShardPair{From: from, To: i, Deliveries: 10, Min: 100 * time.Microsecond}
	}
	f := part(t, st, i, 2, []int64{100, 900})
	f.Clock.OffsetNS, f.Clock.UncertaintyNS, f.Clock.Source = int64(offset), int64(20*time.Microsecond), "coordinator"
	if !old {
		d := int64(drift)
		f.Clock.DriftNS, f.Clock.DriftUncertaintyNS = &d, int64(30*time.Microsecond)
		f.Clock.NTP = &NTP{Synced: false, MaxErrorNS: int64(16 * time.Second)}
	}
	return reread(t, f)
}

// TestMergeClock: the merge keeps a clock row per shard and the pairs
// that exchanged deliveries, LatencyCross merges like Latency, and a part
// without the clock figures (an older mqplan's) still merges, its
// uncertainty unknown.
func TestMergeClock(t *testing.T) {
	tests := []struct {
		name      string
		parts     func(t *testing.T) []*File
		pairs     int
		cross     int64
		known     bool
		uncertain time.Duration
	}{
		{"both ways across", func(t *testing.T) []*File {
			return []*File{clockPart(t, 0, 1, 0, 5*time.Microsecond, false), clockPart(t, 1, 0, -7*time.Millisecond, -40*time.Microsecond, false)}
		}, 2, 4, true, 20*time.Microsecond*2 + 45*time.Microsecond},
		{"all local", func(t *testing.T) []*File {
			return []*File{clockPart(t, 0, 0, 0, 0, false), clockPart(t, 1, 1, time.Millisecond, 0, false)}
		}, 2, 0, true, 0},
		{"an older part", func(t *testing.T) []*File {
			return []*File{clockPart(t, 0, 1, 0, 0, false), clockPart(t, 1, 0, 0, 0, true)}
		}, 1, 4, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Merge(tt.parts(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Stats.Clock
			if c == nil || len(c.Shards) != 2 || len(c.Pairs) != tt.pairs {
				t.Fatalf("clock %+v: want 2 shards, %d pairs", c, tt.pairs)
			}
			if h := m.Stats.Phase(phase.Steady).Total.LatencyCross; (h == nil && tt.cross > 0) || (h != nil && h.TotalCount() != tt.cross) {
				t.Errorf("merged cross-shard latency %v, want %d samples", h, tt.cross)
			}
			u, ok := c.Uncertainty()
			if ok != tt.known || u != tt.uncertain {
				t.Errorf("uncertainty %v (known %v), want %v (known %v)", u, ok, tt.uncertain, tt.known)
			}
			if tt.known && (!c.Shards[1].NTP.Known || c.Shards[1].NTP.Synced || c.Shards[1].NTP.MaxError != 16*time.Second) {
				t.Errorf("NTP %+v", c.Shards[1].NTP)
			}
		})
	}
	t.Run("a same-host shard is marked so", func(t *testing.T) {
		parts := []*File{clockPart(t, 0, 1, 0, 0, false), clockPart(t, 1, 0, 0, 0, false)}
		parts[1].Clock.Source = SameHost
		m, err := Merge(parts, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s := m.Stats.Clock.Shards; s[0].SameHost || !s[1].SameHost || s[1].Source != "same host" {
			t.Errorf("shards %+v: want shard 1 alone same host", s)
		}
	})
	t.Run("a single process has no clock rows", func(t *testing.T) {
		m, err := Merge([]*File{part(t, shardStats(10, 10, []int64{100}), 0, 1, []int64{100})}, Options{})
		if err != nil || m.Stats.Clock != nil {
			t.Errorf("clock %+v, err %v: want none", m.Stats.Clock, err)
		}
	})
}

// TestCheckFromShards: a part's per-shard deliveries name every shard
// once, in order, or the part is refused.
func TestCheckFromShards(t *testing.T) {
	tests := []struct {
		name, from, err string
	}{
		{"one entry for two shards", `[{"shard":0,"deliveries":1,"min_ns":5}]`, "1 from_shards entries for 2 shards"},
		{"out of order", `[{"shard":1,"deliveries":1,"min_ns":5},{"shard":0,"deliveries":1,"min_ns":5}]`, "from_shards[0] is shard 1"},
		{"negative", `[{"shard":0,"deliveries":-1,"min_ns":5},{"shard":1,"deliveries":1,"min_ns":5}]`, "with -1 deliveries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, clockPart(t, 0, 1, 0, 0, false)); err != nil {
				t.Fatal(err)
			}
			s := b.String()
			i := strings.Index(s, `"from_shards": [`)
			j := strings.Index(s[i:], "]")
			data := s[:i] + `"from_shards": ` + tt.from + s[i+j+1:]
			if _, err := Parse("part", []byte(data)); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
		})
	}
}
