package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// TestProfileNeverFalls runs the shipped plans that have both a warmup and
// a ramp, shortened to 3 s of steady, on the embedded broker and on
// Mosquitto, and reads the per-second send rate from the CSV timeline:
// from the first publishing second to the last steady one, no second sends
// at a lower rate than the one before it, beyond what the generator's own
// measured lateness can move between seconds.
//
// The tolerance is the claim's. The intended schedule never falls (the rate
// rises from 0 over warmup and ramp, then holds), so a measured second i
// can only fall below second i-1 by the messages lateness moved across
// their edges:
//   - second i loses the messages intended in it but sent after it ends;
//     they are sent in a later second, whose lag_max_ms records their lag,
//     so there are at most target × (that later second's largest lag);
//   - second i-1 gains the messages intended before it but sent in it, at
//     most target × (its own largest lag).
//
// Messages sent late within their own second move nothing. So the fall is
// at most target × (lag(i-1) + max lag of the seconds after i), plus two
// messages: a second's count of evenly spaced sends is off by at most one
// from its share of the rate, either way, for where its edges fall
// between two sends (the CSV's rate is that count over the second's
// measured length, so a second a few ms long or short moves nothing).
// The old profile (warmup at the full rate, then a ramp from 0) fell by
// nearly the whole rate at the ramp's start (200/s, then 94/s and 72/s for
// 1to1-qos1), which this tolerance cannot hide unless the generator lagged
// by a quarter of a second or more; a run that lagged so is too disturbed
// to judge, and is run again (at most three times) rather than passed.
//
// It runs without the race detector (.ci/run runs it so, before the
// shipped plans' latency bounds): under -race and beside other packages'
// tests, a steady second of the soak on Mosquitto read 96.2/s after
// 101.8/s with only 19 ms of lag recorded, the generator slowed rather
// than the profile falling. Not parallel, so that the package's parallel
// tests do not lag its generator; its four runs (100 and 200 msg/s, a few
// percent of a core each) go side by side.
func TestProfileNeverFalls(t *testing.T) {
	if raceEnabled {
		t.Skip("run without the race detector (.ci/run does)")
	}
	plans := []struct {
		name, path string
		target     float64 // the plan's steady send rate, messages per second
	}{
		{"1to1-qos1", "plans/1to1-qos1.yaml", 200},
		{"soak", "plans/soak.yaml", 100},
	}
	brokers := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"embedded", func(*testing.T) string { return "" }},
		{"mosquitto", func(t *testing.T) string { return mosquittotest.Start(t) }},
	}
	for _, p := range plans {
		for _, b := range brokers {
			t.Run(p.name+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				url := b.url(t)
				const attempts = 3
				for attempt := 1; ; attempt++ {
					csvPath := filepath.Join(t.TempDir(), "timeline.csv")
					// Steady shortened; warmup and ramp kept as shipped.
					// The plan's latency thresholds are left out: a busy
					// machine makes them inconclusive, and this test is
					// about the rate.
					args := []string{"run", "--quiet", "--set", "duration=3s", "--set", "drain=2s",
						"--set", `thresholds=["loss_rate == 0 and dup_rate == 0"]`, "--out", "csv=" + csvPath}
					if url != "" {
						args = append(args, "--broker", url)
					}
					r := runCmd(t, append(args, p.path)...)
					if r.code != 0 {
						t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
					}
					disturbed := checkNoFall(t, csvPath, p.target)
					if disturbed == "" {
						return
					}
					if attempt == attempts {
						t.Fatalf("%d runs too disturbed to judge, the last: %s", attempts, disturbed)
					}
					t.Logf("run %d too disturbed to judge (%s): running it again", attempt, disturbed)
				}
			})
		}
	}
}

// timelineSecond is one total row of the CSV timeline.
type timelineSecond struct {
	at, phase  string
	rate, lagS float64
}

// checkNoFall reads the CSV timeline's total rows and fails at the first
// publishing second whose send rate falls below the previous one's by more
// than lateness explains (see TestProfileNeverFalls). It returns why the
// run was too disturbed to judge, or "" when it was judged.
func checkNoFall(t *testing.T, path string, target float64) string {
	t.Helper()
	secs := readTotals(t, path)
	publishing := func(s timelineSecond) bool {
		return s.phase == "warmup" || s.phase == "ramp" || s.phase == "steady"
	}
	first := slices.IndexFunc(secs, publishing)
	last := first
	for last >= 0 && last+1 < len(secs) && publishing(secs[last+1]) {
		last++
	}
	if first < 0 {
		t.Fatal("the timeline has no publishing second")
	}
	phases := map[string]bool{}
	var steadySum float64
	steadySecs := 0
	for i := first; i <= last; i++ {
		s := secs[i]
		phases[s.phase] = true
		if s.phase == "steady" {
			steadySum += s.rate
			steadySecs++
		}
		if i == first {
			continue
		}
		later := 0.0 // the largest lag of the seconds after i: where i's late messages went
		for _, n := range secs[i+1:] {
			later = math.Max(later, n.lagS)
		}
		tol := target*(secs[i-1].lagS+later) + 2
		if tol > target/2 {
			return fmt.Sprintf("at %ss the generator lagged %.0f ms, and up to %.0f ms after it", s.at, secs[i-1].lagS*1000, later*1000)
		}
		if s.rate < secs[i-1].rate-tol {
			t.Errorf("at %ss (%s) the send rate fell to %.1f/s from %.1f/s, more than the %.1f/s the generator's lag explains", s.at, s.phase, s.rate, secs[i-1].rate, tol)
		}
	}
	if !phases["warmup"] || !phases["ramp"] || !phases["steady"] {
		t.Fatalf("the timeline's publishing seconds cover %v, want warmup, ramp and steady", phases)
	}
	if mean := steadySum / float64(steadySecs); math.Abs(mean-target) > target/10 {
		t.Errorf("steady sent %.1f/s on average over %d seconds, want about %.0f/s", mean, steadySecs, target)
	}
	return ""
}

// readTotals reads the CSV timeline's total rows in order.
func readTotals(t *testing.T, path string) []timelineSecond {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("the CSV does not parse (%d rows): %v", len(rows), err)
	}
	col := func(name string) int {
		i := slices.Index(rows[0], name)
		if i < 0 {
			t.Fatalf("no column %q in %v", name, rows[0])
		}
		return i
	}
	atC, phaseC, groupC, rateC, lagC := col("at_s"), col("phase"), col("group"), col("send_rate"), col("lag_max_ms")
	num := func(row []string, c int) float64 {
		if row[c] == "" {
			return 0 // no send in that second: no lag
		}
		v, err := strconv.ParseFloat(row[c], 64)
		if err != nil {
			t.Fatalf("row %v: column %s: %v", row, rows[0][c], err)
		}
		return v
	}
	var out []timelineSecond
	for _, row := range rows[1:] {
		if row[groupC] == "total" {
			out = append(out, timelineSecond{at: row[atC], phase: row[phaseC], rate: num(row, rateC), lagS: num(row, lagC) / 1000})
		}
	}
	return out
}
