package report

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// shardedStats is a two-shard run: 90 local deliveries at 1 ms and 10
// cross-shard ones at 2 ms (both exact in the histograms), with the clock rows clk.
func shardedStats(t *testing.T, clk *stats.Clock) *stats.Stats {
	st := &stats.Stats{Elapsed: 11700 * time.Millisecond, Phases: phasesAt(), Groups: []stats.GroupInfo{{Name: "sub", Clients: 2, Connected: 2}, {Name: "pub", Clients: 2, Connected: 2}}, Clock: clk}
	st.Phase(phase.Steady).Groups[0] = stats.Metrics{Expected: 100, Received: 100,
		Latency: hist(t, 1000, 90, 2000, 10), LatencyCross: hist(t, 2000, 10)}
	st.Phase(phase.Steady).Groups[1] = stats.Metrics{Sent: 100, ExpectedOwn: 100, ReceivedOwn: 100}
	stats.FinishPhases(st.Phases, nil)
	return st
}

// TestEnvironmentClock: latency_local and latency_cross split latency
// exactly, latency.cross_share is their ratio and clock.* come from the
// shards' rows; a single process has every delivery local, no
// latency_cross and clock.* at 0.
func TestEnvironmentClock(t *testing.T) {
	ms := time.Millisecond
	good := &stats.Clock{
		Shards: []stats.ShardClock{
			{Index: 0, Offset: 0, Delay: 20 * time.Microsecond, DriftKnown: true, Drift: 10 * time.Microsecond, PairsKnown: true},
			{Index: 1, Offset: -7 * ms, Delay: 30 * time.Microsecond, DriftKnown: true, Drift: -40 * time.Microsecond, PairsKnown: true},
		},
		Pairs: []stats.ShardPair{{From: 0, To: 0, Deliveries: 45, Min: ms}, {From: 0, To: 1, Deliveries: 5, Min: 9 * ms},
			{From: 1, To: 0, Deliveries: 5, Min: 9 * ms}, {From: 1, To: 1, Deliveries: 45, Min: ms}},
	}
	skewed := &stats.Clock{Shards: []stats.ShardClock{good.Shards[0], good.Shards[1]}, Pairs: []stats.ShardPair{
		{From: 0, To: 1, Deliveries: 5, Min: 16 * ms}, {From: 1, To: 0, Deliveries: 5, Min: 2 * ms}}}
	skewed.Shards[1].Drift = -7 * ms
	// The offsets held all run (no drift) but the traffic shows shard 0's
	// epoch 3ms after shard 1's: a path to the coordinator slower one way
	// than the other biases every clock sample alike, drift included.
	asym := &stats.Clock{Shards: []stats.ShardClock{good.Shards[0], good.Shards[1]}, Pairs: []stats.ShardPair{
		{From: 0, To: 1, Deliveries: 5, Min: 4 * ms}, {From: 1, To: 0, Deliveries: 5, Min: -2 * ms}}}
	// Two shards on the coordinator's host: one clock, δ the reads' gaps,
	// no drift; the traffic's 20µs residual is the network's asymmetry,
	// finer than it can resolve, and not checked.
	sameHost := &stats.Clock{Shards: []stats.ShardClock{
		{Index: 0, Delay: 400 * time.Nanosecond, DriftKnown: true, Source: stats.SourceSameHost, SameHost: true, PairsKnown: true},
		{Index: 1, Delay: 400 * time.Nanosecond, DriftKnown: true, Source: stats.SourceSameHost, SameHost: true, PairsKnown: true},
	}, Pairs: []stats.ShardPair{{From: 0, To: 1, Deliveries: 5, Min: 2*ms + 40*time.Microsecond}, {From: 1, To: 0, Deliveries: 5, Min: 2 * ms}}}
	old := &stats.Clock{Shards: []stats.ShardClock{{Index: 0}, {Index: 1}}}
	tests := []struct {
		name     string
		clk      *stats.Clock
		want     metric.Set
		absent   []metric.Name
		warnings []string
	}{
		{"sharded, clocks agree", good, metric.Set{
			metric.LatencyLocalP99: ms, metric.LatencyLocalMax: ms, metric.LatencyCrossP50: 2 * ms, metric.LatencyCrossMin: 2 * ms,
			metric.LatencyP99: 2 * ms, metric.LatencyCrossShare: 0.1,
			metric.ClockMaxOffset: 7 * ms, metric.ClockUncertainty: 100 * time.Microsecond,
		}, nil, nil},
		{"sharded, shard 1 drifted 7ms", skewed, metric.Set{
			metric.ClockUncertainty: 7*ms + 60*time.Microsecond,
		}, nil, []string{"cross-shard latency ±7.06ms (clock.uncertainty, above 1ms or a tenth of latency_cross.p50 2ms): gate on latency_local.p99 instead"}},
		{"sharded, same host", sameHost, metric.Set{metric.ClockUncertainty: 800 * time.Nanosecond, metric.ClockMaxOffset: time.Duration(0)}, nil, nil},
		{"sharded, traffic disagrees with the offsets", asym, metric.Set{metric.ClockUncertainty: 100 * time.Microsecond},
			nil, []string{"shards 0 and 1: their traffic says shard 0's epoch is 3ms after shard 1's (least latency each way), beyond the ±100µs"}},
		{"sharded, parts without clock figures", old, metric.Set{metric.ClockMaxOffset: time.Duration(0)},
			[]metric.Name{metric.ClockUncertainty, metric.LatencyLocalP99, metric.LatencyCrossP99, metric.LatencyCrossShare},
			[]string{"clock.uncertainty is unknown (a part lacks its clock figures"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := shardedStats(t, tt.clk)
			r := Evaluate(testPlan(), nil, st)
			for name, want := range tt.want {
				if got := r.Measured.Top[name]; got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			for _, name := range tt.absent {
				if v, ok := r.Measured.Top[name]; ok {
					t.Errorf("%s = %v, want absent", name, v)
				}
			}
			all := strings.Join(r.Warnings, "\n")
			for _, w := range tt.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
			if len(tt.warnings) == 0 && strings.Contains(all, "shard") {
				t.Errorf("unexpected clock warnings:\n%s", all)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "Clocks (θ = coordinator − shard") {
				t.Errorf("the table lacks the Clocks section:\n%s", b.String())
			}
			if tt.clk == sameHost {
				for _, cell := range []string{"400ns", "0 (one clock)", "same host", "cross-shard latency ± 800ns"} {
					if !strings.Contains(b.String(), cell) {
						t.Errorf("the same-host Clocks section lacks %q:\n%s", cell, b.String())
					}
				}
			}
			for name, write := range map[string]func(io.Writer, *Result) error{"markdown": WriteMarkdown, "html": WriteHTML} {
				b.Reset()
				if err := write(&b, r); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), "θ = coordinator − shard") {
					t.Errorf("the %s report lacks the Clocks section", name)
				}
			}
			// The JSON carries the clocks: read back, the same rows.
			b.Reset()
			if err := WriteJSON(&b, r); err != nil {
				t.Fatal(err)
			}
			back, err := ReadJSON(&b)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := clockJSON(back.Clock), clockJSON(tt.clk); !equalJSON(t, got, want) {
				t.Errorf("clock read back %+v, want %+v", got, want)
			}
			for i, sc := range back.Clock.Shards {
				if sc.SameHost != tt.clk.Shards[i].SameHost {
					t.Errorf("shard %d read back same host %v, want %v", i, sc.SameHost, tt.clk.Shards[i].SameHost)
				}
			}
		})
	}
	t.Run("single process", func(t *testing.T) {
		st := shardedStats(t, nil)
		st.Phase(phase.Steady).Groups[0].LatencyCross = nil
		st.Phase(phase.Steady).Total = stats.Metrics{}
		stats.FinishPhases(st.Phases, nil)
		r := Evaluate(testPlan(), nil, st)
		top := r.Measured.Top
		if top[metric.LatencyLocalP50] != top[metric.LatencyP50] || top[metric.LatencyLocalMax] != 2*ms || top[metric.LatencyCrossShare] != 0.0 ||
			top[metric.ClockUncertainty] != time.Duration(0) || top[metric.ClockMaxOffset] != time.Duration(0) {
			t.Errorf("single process: %v", top)
		}
		if v, ok := top[metric.LatencyCrossP99]; ok {
			t.Errorf("latency_cross.p99 = %v in a single process, want absent (no samples: a threshold on it fails)", v)
		}
		var b bytes.Buffer
		if err := WriteTable(&b, r); err != nil {
			t.Fatal(err)
		}
		for name, write := range map[string]func(io.Writer, *Result) error{"table": WriteTable, "markdown": WriteMarkdown, "html": WriteHTML} {
			b.Reset()
			if err := write(&b, r); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "θ = coordinator − shard") {
				t.Errorf("a single process's %s report has a Clocks section", name)
			}
		}
	})
}

// equalJSON compares two values by their JSON encodings.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// TestCompareClockRows: mqplan compare's total shows latency_local and
// latency_cross, latency.cross_share and clock.uncertainty when either
// run was sharded (the last two never marked: they say how the load was
// split and how far its cross-shard figures hold), and not between two
// single runs, whose comparison stays as it was.
func TestCompareClockRows(t *testing.T) {
	sharded := &stats.Clock{Shards: []stats.ShardClock{
		{Index: 0, Delay: 20 * time.Microsecond, DriftKnown: true, PairsKnown: true},
		{Index: 1, Delay: 30 * time.Microsecond, DriftKnown: true, PairsKnown: true},
	}, Pairs: []stats.ShardPair{{From: 0, To: 1, Deliveries: 5, Min: 2 * time.Millisecond}, {From: 1, To: 0, Deliveries: 5, Min: 2 * time.Millisecond}}}
	run := func(c *stats.Clock) *Result {
		st := shardedStats(t, c)
		if c == nil {
			st.Phase(phase.Steady).Groups[0].LatencyCross = nil
			st.Phase(phase.Steady).Total = stats.Metrics{}
			stats.FinishPhases(st.Phases, nil)
		}
		return Evaluate(testPlan(), nil, st)
	}
	single, split := run(nil), run(sharded)
	tests := []struct {
		name string
		a, b *Result
		want map[metric.Name]Mark // nil: no clock rows
	}{
		{"two single runs", single, single, nil},
		{"single, then sharded", single, split, map[metric.Name]Mark{
			// 2ms p99 in one process, 1ms within a shard; cross-shard
			// latency new, not marked.
			metric.LatencyLocalP99: Better, metric.LatencyCrossP50: Same, metric.LatencyCrossShare: Same, metric.ClockUncertainty: Same}},
		{"sharded, then single", split, single, map[metric.Name]Mark{
			metric.LatencyLocalP50: Same, metric.LatencyLocalP99: Worse, metric.LatencyCrossP50: Worse, metric.LatencyCrossP99: Worse,
			metric.LatencyCrossShare: Same, metric.ClockUncertainty: Same}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.a, tt.b, "a.json", "b.json", DefaultTolerance)
			for which, cmp := range map[string]*Comparison{"compared": c, "read back": readBackComparison(t, c)} {
				got := map[metric.Name]Mark{}
				for _, r := range cmp.Sections[0].Rows {
					if slices.ContainsFunc(comparedClock, func(m compared) bool { return m.name == r.Metric }) {
						got[r.Metric] = r.Mark
					}
				}
				if tt.want == nil && len(got) > 0 {
					t.Errorf("%s: clock rows %v between single runs", which, got)
				}
				if tt.want != nil && len(got) != len(comparedClock) {
					t.Errorf("%s: clock rows %v, want all of %v", which, got, comparedClock)
				}
				for m, mark := range tt.want {
					if got[m] != mark {
						t.Errorf("%s: %s marked %v, want %v", which, m, got[m], mark)
					}
				}
			}
		})
	}
}
