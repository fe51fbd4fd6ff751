package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// disturbedStats is the fixture run with a steady timeline of n seconds,
// the seconds listed in starved waiting 500ms for a CPU, those in
// saturated busy at 95 % of the CPUs, the others waiting 20ms at 30 %.
// Its steady e2e latency is p50 1ms, p99 1.5ms, max 2ms; its send lag
// p99 1.2ms.
func disturbedStats(t *testing.T, n int, starved, saturated []int) *stats.Stats {
	t.Helper()
	st := fullStats(t)
	st.Timeline = nil
	in := func(s int, list []int) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for s := range n {
		g := stats.GenSecond{Sampled: true, Wait: 20 * time.Millisecond, Delay: 50 * time.Microsecond, Busy: 0.3}
		if in(s, starved) {
			g.Wait, g.Delay = 500*time.Millisecond, time.Millisecond
		}
		if in(s, saturated) {
			g.Busy = 0.95
		}
		st.Timeline = append(st.Timeline, stats.Second{At: time.Duration(s+2) * time.Second, Phase: phase.Steady,
			Sent: 800, Received: 799, LagMax: 1200 * time.Microsecond, Gen: g})
	}
	return st
}

// TestDisturbanceVerdict checks the INCONCLUSIVE rule on synthetic
// per-second figures: which failures the generator's disturbance explains
// and which it cannot.
func TestDisturbanceVerdict(t *testing.T) {
	type c struct {
		name               string
		n                  int
		starved, saturated []int
		thresholds         []string
		edit               func(*plans.Plan, *stats.Stats)
		want               string
		// notJudged lists the thresholds (by index) left unjudged.
		notJudged []int
	}
	three := []int{1, 4, 7}
	cases := []c{
		{name: "undisturbed latency failure fails", n: 10, thresholds: []string{"p99 < 1ms"}, want: VerdictFail},
		{name: "starved 3 of 10 explains p99", n: 10, starved: three, thresholds: []string{"p99 < 1ms"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "starved 1 of 20 is below the bound", n: 20, starved: []int{3}, thresholds: []string{"p99 < 1ms"}, want: VerdictFail},
		{name: "starved 2 of 20 is at the bound", n: 20, starved: []int{3, 9}, thresholds: []string{"p99 < 1ms"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "saturated explains p99", n: 10, saturated: []int{0, 1, 2, 3, 4}, thresholds: []string{"latency.p999 < 1ms"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "p50 needs half the window", n: 10, starved: three, thresholds: []string{"p50 < 500us"}, want: VerdictFail},
		{name: "p50 with half the window", n: 10, starved: []int{0, 2, 4, 6, 8}, thresholds: []string{"p50 < 500us"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "min needs the whole window", n: 10, starved: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, thresholds: []string{"latency.min < 500us"}, want: VerdictFail},
		{name: "max with one disturbed second of 20", n: 20, starved: []int{5}, thresholds: []string{"latency.max < 1ms"}, want: VerdictFail},
		{name: "max by disturbed seconds", n: 10, starved: []int{5, 6}, thresholds: []string{"latency.max < 1ms"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "lag and wait far below the latency: the broker's", n: 10, starved: three, thresholds: []string{"p99 < 1s"}, want: VerdictFail,
			edit: func(_ *plans.Plan, st *stats.Stats) { slowBroker(t, st, 2*time.Second, 10*time.Microsecond) }},
		{name: "lag below the latency, wait of its order", n: 10, starved: three, thresholds: []string{"p99 < 100ms"}, want: VerdictInconclusive, notJudged: []int{0},
			edit: func(_ *plans.Plan, st *stats.Stats) { slowBroker(t, st, 400*time.Millisecond, 10*time.Microsecond) }},
		{name: "lag of the latency's order", n: 10, starved: three, thresholds: []string{"p99 < 100ms"}, want: VerdictInconclusive, notJudged: []int{0},
			edit: func(_ *plans.Plan, st *stats.Stats) { slowBroker(t, st, 2*time.Second, 1200*time.Millisecond) }},
		{name: "loss still fails", n: 10, starved: three, thresholds: []string{"p99 < 1ms", "lost == 0"}, want: VerdictFail, notJudged: []int{0}},
		{name: "compound with a count that fails", n: 10, starved: three, thresholds: []string{"p99 < 1ms and dup_rate == 0"}, want: VerdictFail},
		{name: "compound with a count that holds", n: 10, starved: three, thresholds: []string{"p99 < 1ms and sent > 0"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "latency too low is never explained", n: 10, starved: three, thresholds: []string{"p99 > 5ms"}, want: VerdictFail},
		{name: "lag thresholds measure the generator", n: 10, starved: three, thresholds: []string{"lag.p99 < 1ms"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "connect latency is judged", n: 10, starved: three, thresholds: []string{"connect.p99 < 100us"}, want: VerdictFail},
		{name: "per group", n: 10, starved: three, thresholds: []string{"groups.sub.p99 < 1ms"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "request round trip", n: 10, starved: three, thresholds: []string{"rtt.p99 < 1ms"}, want: VerdictInconclusive, notJudged: []int{0},
			edit: func(_ *plans.Plan, st *stats.Stats) { withRequests(t, st) }},
		{name: "request timeouts are judged", n: 10, starved: three, thresholds: []string{"rtt.p99 < 1ms", "rtt.timeouts == 0"}, want: VerdictFail, notJudged: []int{0},
			edit: func(_ *plans.Plan, st *stats.Stats) { withRequests(t, st) }},
		{name: "ack latency", n: 10, starved: three, thresholds: []string{"ack.p99 < 100us", "p99 < 10ms"}, want: VerdictInconclusive, notJudged: []int{0}},
		{name: "disturbance: fail opts out", n: 10, starved: three, thresholds: []string{"p99 < 1ms"}, want: VerdictFail,
			edit: func(p *plans.Plan, _ *stats.Stats) { p.Disturbance = plans.DisturbanceFail }},
		{name: "not measured (not Linux)", n: 10, thresholds: []string{"p99 < 1ms"}, want: VerdictFail,
			edit: func(_ *plans.Plan, st *stats.Stats) {
				for i := range st.Timeline {
					st.Timeline[i].Gen = stats.GenSecond{}
				}
			}},
		{name: "incomplete wins", n: 10, starved: three, thresholds: []string{"p99 < 1ms"}, want: VerdictIncomplete, notJudged: []int{0},
			edit: func(_ *plans.Plan, st *stats.Stats) { st.Interrupted = true }},
		{name: "passing run stays PASS", n: 10, starved: three, thresholds: []string{"p99 < 10ms"}, want: VerdictPass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(tc.thresholds...)
			st := disturbedStats(t, tc.n, tc.starved, tc.saturated)
			if tc.edit != nil {
				tc.edit(p, st)
			}
			r := Evaluate(p, compile(t, p), st)
			if got := r.Verdict(); got != tc.want {
				t.Fatalf("verdict %s, want %s (%s)", got, tc.want, r.Summary())
			}
			var got []int
			for i, o := range r.Thresholds {
				if o.NotJudged != "" {
					got = append(got, i)
				}
			}
			if len(got) != len(tc.notJudged) || (len(got) > 0 && got[0] != tc.notJudged[0]) {
				t.Fatalf("not judged %v, want %v", got, tc.notJudged)
			}
			if tc.want == VerdictInconclusive {
				s := r.Summary()
				for _, w := range []string{"INCONCLUSIVE: mqplan waited ", "for a CPU in", "seconds disturbed", "its p99 send lag was ", "latency thresholds are not judged (" + tc.thresholds[0] + " read "} {
					if !strings.Contains(s, w) {
						t.Errorf("summary %q lacks %q", s, w)
					}
				}
			}
		})
	}
}

// slowBroker gives st's steady phase an e2e latency of lat and a send
// lag of lag for every message.
func slowBroker(t *testing.T, st *stats.Stats, lat, lag time.Duration) {
	ph := st.Phase(phase.Steady)
	ph.Groups[0].Latency = hist(t, lat.Microseconds(), 8000)
	ph.Groups[1].Lag = hist(t, lag.Microseconds(), 8000)
	ph.Total = stats.Metrics{}
	for g := range ph.Groups {
		ph.Total.Merge(&ph.Groups[g])
	}
}

// TestMeasureDisturbance checks the window's sums and the per-second
// classification at its bounds.
func TestMeasureDisturbance(t *testing.T) {
	tl := []stats.Second{
		{Phase: phase.Warmup, Gen: stats.GenSecond{Sampled: true, Wait: time.Second}},
		{Phase: phase.Steady, LagMax: 5 * time.Millisecond, Gen: stats.GenSecond{Sampled: true, Wait: starvedWait, Delay: starvedDelay}},
		{Phase: phase.Steady, LagMax: 7 * time.Millisecond, Gen: stats.GenSecond{Sampled: true, Wait: time.Second, Delay: starvedDelay - 1}},
		{Phase: phase.Steady, LagMax: 9 * time.Millisecond, Gen: stats.GenSecond{Sampled: true, Wait: starvedWait - 1, Delay: time.Second, Busy: saturatedBusy}},
		{Phase: phase.Steady, LagMax: 50 * time.Millisecond, Gen: stats.GenSecond{Sampled: true, Wait: starvedWait - 1, Busy: saturatedBusy - 0.01, Pressure: time.Second, HasPressure: true}},
		{Phase: phase.Steady, Gen: stats.GenSecond{}},
	}
	d := MeasureDisturbance(tl, phase.Steady, 3*time.Millisecond)
	want := Disturbance{Phase: phase.Steady, Seconds: 4, Starved: 1, Saturated: 1, Disturbed: 2,
		Wait: 3*starvedWait - 2 + time.Second, WaitMax: starvedWait, BusyMax: saturatedBusy, Pressure: time.Second, HasPressure: true,
		LagP99: 3 * time.Millisecond, LagMax: 9 * time.Millisecond}
	if d != want {
		t.Fatalf("got %+v\nwant %+v", d, want)
	}
	if !d.Significant() || d.Share() != 0.5 {
		t.Fatalf("share %v, significant %v", d.Share(), d.Significant())
	}
}

// TestInconclusiveOutputs checks that every format shows the verdict and
// its evidence, and that a saved result reads back INCONCLUSIVE with the
// same evidence (mqplan report then exits 4).
func TestInconclusiveOutputs(t *testing.T) {
	p := testPlan("p99 < 1ms", "sent > 0")
	r := Evaluate(p, compile(t, p), disturbedStats(t, 10, []int{1, 4, 7}, nil))
	if r.Verdict() != VerdictInconclusive {
		t.Fatalf("verdict %s", r.Verdict())
	}
	out := outputs(t, r)
	want := map[string][]string{
		"table":         {"| INCONCLUSIVE", "INCONCLUSIVE: mqplan waited 1.64s for a CPU in 10s of steady (3 of 10 seconds disturbed: 3 starved)", "Disturbance: mqplan waited", "NOT JUDGED"},
		"json":          {`"verdict": "INCONCLUSIVE"`, `"not_judged": "not judged: latency.p99 read 1.5ms, and mqplan waited`, `"disturbance": {`, `"self.cpu_wait": "1.64s"`, `"self.disturbed": 0.3`, `"gen": {`},
		"--out junit":   {`<skipped message="p99 &lt; 1ms: latency.p99=1.5ms: not judged`, `skipped="1"`, `name="verdict" value="INCONCLUSIVE"`},
		"--out md":      {"INCONCLUSIVE", "Disturbance: mqplan waited", "NOT JUDGED: not judged"},
		"--out html":    {"INCONCLUSIVE", "Disturbance: mqplan waited", "NOT JUDGED: not judged"},
		"--out summary": {"INCONCLUSIVE"},
	}
	for f, ws := range want {
		text, ok := out[f]
		if !ok {
			continue
		}
		for _, w := range ws {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q", f, w)
			}
		}
	}
	if testing.Verbose() {
		t.Log(out["--out junit"])
	}
	if strings.Contains(out["--out junit"], "<failure") {
		t.Errorf("junit has a failure: %s", out["--out junit"])
	}
	back, err := ReadJSON(strings.NewReader(out["json"]))
	if err != nil {
		t.Fatal(err)
	}
	if back.Verdict() != VerdictInconclusive || back.Summary() != r.Summary() {
		t.Fatalf("read back: %s, want %s", back.Summary(), r.Summary())
	}
	if back.Disturbance == nil || *back.Disturbance != *r.Disturbance {
		t.Fatalf("read back disturbance %+v, want %+v", back.Disturbance, r.Disturbance)
	}
}

// TestCompareDisturbed: a latency that grew in a disturbed run is marked
// disturbed, not WORSE, so that --fail-on-regression and a baseline's
// summary do not count it; a loss that grew is still WORSE, and an
// undisturbed run's latency growth is WORSE. A result judged against a
// baseline reads back with the same marks.
func TestCompareDisturbed(t *testing.T) {
	p := testPlan("p99 < 10ms")
	a := Evaluate(p, compile(t, p), fullStats(t))
	slower := func(starved []int) *stats.Stats {
		st := disturbedStats(t, 10, starved, nil)
		ph := st.Phase(phase.Steady)
		ph.Groups[0].Latency = hist(t, 1000, 7000, 9000, 993)
		ph.Groups[1].Lost, ph.Groups[1].LostOwn = 50, 50
		ph.Total = stats.Metrics{}
		for g := range ph.Groups {
			ph.Total.Merge(&ph.Groups[g])
		}
		return st
	}
	cases := []struct {
		name      string
		b         *stats.Stats
		disturbed bool
	}{
		{"disturbed", slower([]int{1, 4, 7}), true},
		{"undisturbed", slower(nil), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(a, Evaluate(p, compile(t, p), tc.b), "a.json", "b.json", DefaultTolerance)
			worse := strings.Join(c.Worse(), "; ")
			if !strings.Contains(worse, "lost") {
				t.Errorf("worse %q lacks lost", worse)
			}
			if got := strings.Contains(worse, "latency.p99"); got == tc.disturbed {
				t.Errorf("worse %q: latency.p99 listed %v, want %v", worse, got, !tc.disturbed)
			}
			if (c.Disturbed != "") != tc.disturbed {
				t.Errorf("disturbed %q", c.Disturbed)
			}
			var js bytes.Buffer
			if err := WriteComparisonJSON(&js, c); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(js.String(), `"mark": "disturbed"`); got != tc.disturbed {
				t.Errorf("JSON has a disturbed mark: %v, want %v", got, tc.disturbed)
			}
			// Judged against a baseline, and read back.
			b := EvaluateWithBaseline(p, compile(t, p), tc.b, &Baseline{File: "a.json", Result: a})
			var doc bytes.Buffer
			if err := WriteJSON(&doc, b); err != nil {
				t.Fatal(err)
			}
			back, err := ReadJSON(&doc)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(back.Comparison.Worse(), "; "), strings.Join(b.Comparison.Worse(), "; "); got != want {
				t.Errorf("read back worse %q, want %q", got, want)
			}
		})
	}
}

// TestReadJSONRefusesDisturbance: a saved INCONCLUSIVE result whose
// disturbance figures no run gives, or whose not_judged marks a threshold
// that passed, is refused, naming where.
func TestReadJSONRefusesDisturbance(t *testing.T) {
	p := testPlan("p99 < 1ms", "sent > 0")
	r := Evaluate(p, compile(t, p), disturbedStats(t, 10, []int{1, 4, 7}, nil))
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(doc, old) {
			t.Fatalf("the document has no %q", old)
		}
		return strings.Replace(doc, old, new, 1)
	}
	cases := []struct{ name, doc, want string }{
		{"more disturbed seconds than seconds", edit(`"disturbed": 3,`, `"disturbed": 11,`), "disturbance: the counts and durations must be within 0 and its seconds"},
		{"negative wait", edit(`"cpu_wait": "500ms"`, `"cpu_wait": "-500ms"`), "timeline[1].gen: cpu_wait -500ms"},
		{"not judged on a pass", edit(`"pass": true,`, `"pass": true, "not_judged": "x",`), "not_judged is only for a failed threshold"},
		{"verdict edited", edit(`"verdict": "INCONCLUSIVE"`, `"verdict": "FAIL"`), `its verdict "FAIL" disagrees`},
		{"unknown disturbance", edit(`"drain": "5s",`, `"drain": "5s", "disturbance": "ignore",`), `plan.disturbance: "ignore" is not a disturbance`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
