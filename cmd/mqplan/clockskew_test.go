package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/report"
)

// skewPlan splits into two shards (stripe: client i on shard i mod 2)
// whose deliveries cross both ways: each pub-k/sub-k pair shares a shard
// (local), and each of the two watchers, one a shard, hears all four
// publishers, two of them from the other shard. A third of the
// deliveries cross.
const skewPlan = `name: skew
broker: {url: embedded, protocol: 5}
sharding: {strategy: stripe}
groups:
  - name: sub
    count: 4
    client_id: "skew-sub-%i"
    subscribe: {topic: "skew/%i", qos: 0}
  - name: watch
    count: 2
    client_id: "skew-watch-%i"
    subscribe: {topic: "skew/#", qos: 0}
  - name: pub
    count: 4
    client_id: "skew-pub-%i"
    publish: {topic: "skew/%i", qos: 0, size: 64, every: 20ms}
warmup: 200ms
duration: 2s
drain: 2s
thresholds:
  - clock.uncertainty < 1ms
  - latency_cross.p99 < 1ms
`

// skewRun runs skewPlan as two in-process shards, shard 1's clock 7 ms
// ahead through the test hook (the offset corrected or not), and reads
// the coordinator's JSON result.
func skewRun(t *testing.T, b *broker.Broker, correct bool) (*report.Result, string) {
	t.Helper()
	vars := map[string]string{testHooksVar: "1", testOffsetVar: "1:+7ms"}
	if !correct {
		vars[testNoCorrectVar] = "1"
	}
	r, results := shardsRun(t, b, vars)
	if !strings.Contains(results[1].stderr, "TEST HOOK: test clock skew +7ms") {
		t.Errorf("the skewed shard does not say it runs with the test hook:\n%s", results[1].stderr)
	}
	return r, results[0].stdout + results[0].stderr + results[1].stderr
}

// shardsRun runs skewPlan as two in-process shards under the
// environment vars, and reads the coordinator's JSON result.
func shardsRun(t *testing.T, b *broker.Broker, vars map[string]string) (*report.Result, []result) {
	t.Helper()
	dir, addr := t.TempDir(), loopback.FreeAddr(t)
	plan := filepath.Join(dir, "skew.yaml")
	if err := os.WriteFile(plan, []byte(skewPlan), 0o600); err != nil {
		t.Fatal(err)
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"run", "--shard", fmt.Sprintf("%d/2", i), "--coordinator", addr, "--run-id", "skew",
				"--coordinator-timeout", "20s", "--broker", b.URL(), "--partial", filepath.Join(dir, fmt.Sprintf("part-%d.json", i))}
			if i == 0 {
				args = append(args, "--json", filepath.Join(dir, "result.json"))
			}
			results[i] = runCmdWith(t, cmdOpts{vars: vars}, append(args, plan)...)
		}()
	}
	wg.Wait()
	out := results[0].stdout + results[0].stderr + results[1].stderr
	if results[1].code != 0 || results[0].code > 1 {
		t.Fatalf("exit %d and %d\n%s", results[0].code, results[1].code, out)
	}
	r := savedResult(t, filepath.Join(dir, "result.json"))
	if r.Clock == nil || len(r.Clock.Shards) != 2 {
		t.Fatalf("the result has no clock rows: %+v\n%s", r.Clock, out)
	}
	return r, results
}

// TestSameHostShards: two shards on one host (here, one process) read
// the coordinator's clocks: each says "same host", its δ is the gap of
// two clock reads (under a few µs, where a loopback clock sample gives
// tens), its drift 0 by construction, and the run has no clock warning.
func TestSameHostShards(t *testing.T) {
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	r, results := shardsRun(t, b, nil)
	for i, s := range r.Clock.Shards {
		if s.Source != "same host" || s.Offset != 0 || s.Delay <= 0 || s.Delay > 5*time.Microsecond || !s.DriftKnown || s.Drift != 0 {
			t.Errorf("shard %d: %q, θ %v ± %v, drift %v (known %v); want same host, θ 0 ± under 5µs, drift 0",
				i, s.Source, s.Offset, s.Delay, s.Drift, s.DriftKnown)
		}
		if !strings.Contains(results[i].stderr, "same host") {
			t.Errorf("shard %d does not say it shares the coordinator's clocks:\n%s", i, results[i].stderr)
		}
	}
	u, _ := r.Measured.Top[metric.ClockUncertainty].(time.Duration)
	if u <= 0 || u > 10*time.Microsecond {
		t.Errorf("clock.uncertainty %v, want the two shards' δ, under 10µs", u)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "clock") || strings.Contains(w, "cross-shard") || strings.Contains(w, "traffic") {
			t.Errorf("a clock warning on one host: %q", w)
		}
	}
	t.Logf("δ %v and %v, clock.uncertainty %v, latency_local.p50 %v, latency_cross.p50 %v", r.Clock.Shards[0].Delay, r.Clock.Shards[1].Delay,
		u, r.Measured.Top[metric.LatencyLocalP50], r.Measured.Top[metric.LatencyCrossP50])
}

// TestClockSkew: shard 1's wall clock reads 7 ms ahead (the test hook).
// With the offset applied, the coordinator measures θ = -7ms within the
// shard's δ, the epochs stay aligned within clock.uncertainty (< 1ms,
// passing its threshold), so cross-shard latency stays near same-shard
// latency and the traffic's pair estimate agrees. Without it, shard 1's
// epoch is 7 ms early: the drift sample finds it, clock.uncertainty
// fails its threshold and warns, the pair estimate sees 7 ms, and
// latency_cross shifts by it while latency_local does not.
func TestClockSkew(t *testing.T) {
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	const skew = 7 * time.Millisecond
	dur := func(t *testing.T, r *report.Result, n metric.Name) time.Duration {
		t.Helper()
		d, ok := r.Measured.Top[n].(time.Duration)
		if !ok {
			t.Fatalf("%s: %v, want a duration", n, r.Measured.Top[n])
		}
		return d
	}
	pass := func(r *report.Result, expr string) bool {
		for _, th := range r.Thresholds {
			if th.Expr == expr {
				return th.Pass
			}
		}
		t.Fatalf("no threshold %q", expr)
		return false
	}
	// residual is the traffic's estimate of how much later shard 0's
	// epoch is than shard 1's: (min 0→1 − min 1→0)/2.
	residual := func(t *testing.T, r *report.Result) time.Duration {
		t.Helper()
		var m01, m10 *time.Duration
		for _, p := range r.Clock.Pairs {
			switch {
			case p.From == 0 && p.To == 1:
				m01 = &p.Min
			case p.From == 1 && p.To == 0:
				m10 = &p.Min
			}
		}
		if m01 == nil || m10 == nil {
			t.Fatalf("no deliveries both ways: %+v", r.Clock.Pairs)
		}
		return (*m01 - *m10) / 2
	}

	corrected, out := skewRun(t, b, true)
	s0, s1 := corrected.Clock.Shards[0], corrected.Clock.Shards[1]
	// θ = coordinator − shard: a shard 7 ms ahead is at -7ms, measured
	// within its δ (the clock sample's half round trip bounds its error).
	if (s1.Offset+skew).Abs() > s1.Delay || s0.Offset.Abs() > s0.Delay {
		t.Errorf("θ %v ± %v and %v ± %v, want -7ms and 0 within δ", s1.Offset, s1.Delay, s0.Offset, s0.Delay)
	}
	if !s1.DriftKnown || !s1.NTP.Known && s1.NTP.Synced {
		t.Errorf("shard 1: drift known %v, NTP %+v", s1.DriftKnown, s1.NTP)
	}
	u := dur(t, corrected, metric.ClockUncertainty)
	if !pass(corrected, "clock.uncertainty < 1ms") {
		t.Errorf("clock.uncertainty %v with the offset applied, want < 1ms\n%s", u, out)
	}
	// The pair estimate agrees with the offsets: within the pair's bound,
	// the uncertainty itself.
	if res := residual(t, corrected); res.Abs() > u {
		t.Errorf("the traffic puts shard 0's epoch %v after shard 1's, beyond clock.uncertainty %v", res, u)
	}
	if strings.Contains(strings.Join(corrected.Warnings, "\n"), "their traffic says") {
		t.Errorf("corrected run warns of its traffic: %q", corrected.Warnings)
	}
	// Same broker, same loopback both ways: the two p50s differ by the
	// alignment error (≤ clock.uncertainty, < 1ms) plus the noise of two
	// medians on a loaded machine (another millisecond): far from 7ms.
	local, cross := dur(t, corrected, metric.LatencyLocalP50), dur(t, corrected, metric.LatencyCrossP50)
	if (cross - local).Abs() > u+time.Millisecond {
		t.Errorf("latency_cross.p50 %v, latency_local.p50 %v: more apart than clock.uncertainty %v + 1ms", cross, local, u)
	}
	t.Logf("corrected: θ1 %v ± %v, drift1 %v, clock.uncertainty %v, pair residual %v, latency_local.p50 %v, latency_cross.p50 %v",
		s1.Offset, s1.Delay, s1.Drift, u, residual(t, corrected), local, cross)
	if share, _ := corrected.Measured.Top[metric.LatencyCrossShare].(float64); share < 0.3 || share > 0.37 {
		t.Errorf("latency.cross_share %v, want a third", share)
	}

	skewed, out := skewRun(t, b, false)
	if skewed.Verdict() == corrected.Verdict() && pass(skewed, "clock.uncertainty < 1ms") {
		t.Errorf("clock.uncertainty %v passes < 1ms with a 7ms skew uncorrected\n%s", skewed.Measured.Top[metric.ClockUncertainty], out)
	}
	if pass(skewed, "latency_cross.p99 < 1ms") {
		t.Errorf("latency_cross.p99 %v passes < 1ms with a 7ms skew uncorrected", skewed.Measured.Top[metric.LatencyCrossP99])
	}
	if d := skewed.Clock.Shards[1].Drift; (d + skew).Abs() > time.Millisecond {
		t.Errorf("shard 1's drift %v, want about -7ms (its epoch 7ms early)", d)
	}
	if !strings.Contains(strings.Join(skewed.Warnings, "\n"), "cross-shard latency ±7") {
		t.Errorf("no clock warning: %q", skewed.Warnings)
	}
	if res := residual(t, skewed); (res - skew).Abs() > time.Millisecond {
		t.Errorf("the traffic puts shard 0's epoch %v after shard 1's, want about 7ms", res)
	}
	t.Logf("uncorrected: drift1 %v, clock.uncertainty %v, pair residual %v, latency_local.p50 %v, latency_cross.p90 %v",
		skewed.Clock.Shards[1].Drift, skewed.Measured.Top[metric.ClockUncertainty], residual(t, skewed),
		skewed.Measured.Top[metric.LatencyLocalP50], skewed.Measured.Top[metric.LatencyCrossP90])
	// Half the cross-shard deliveries (into shard 1) arrive 7ms late by
	// its clock: latency_cross.p90 is in that half; same-shard latency
	// does not move.
	if p90 := dur(t, skewed, metric.LatencyCrossP90); p90 < skew-time.Millisecond {
		t.Errorf("latency_cross.p90 %v, want at least 6ms", p90)
	}
	if l := dur(t, skewed, metric.LatencyLocalP50); (l - local).Abs() > time.Millisecond {
		t.Errorf("latency_local.p50 %v with the skew uncorrected, %v with it corrected", l, local)
	}
}
