package report

import (
	"bytes"
	"encoding/json"
	"github.com/mqplan/mqplan/plans"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
)

// TestCompareMarks pins when a change is marked, one metric at a time.
func TestCompareMarks(t *testing.T) {
	tests := []struct {
		name   string
		metric metric.Name
		a, b   any
		tol    float64
		want   Mark
		change float64 // NaN: none
	}{
		{"rate up beyond", metric.RecvRate, 800.0, 900.0, 0.05, Better, 0.125},
		{"rate down beyond", metric.SendRate, 800.0, 700.0, 0.05, Worse, -0.125},
		{"rate down within", metric.SendRate, 800.0, 780.0, 0.05, Same, -0.025},
		{"rate down exactly the tolerance", metric.SendRate, 800.0, 760.0, 0.05, Same, -0.05},
		{"latency up beyond", metric.LatencyP99, time.Millisecond, 1500 * time.Microsecond, 0.05, Worse, 0.5},
		{"latency down beyond", metric.LatencyP99, time.Millisecond, 500 * time.Microsecond, 0.05, Better, -0.5},
		{"latency up within", metric.LatencyP50, time.Millisecond, 1030 * time.Microsecond, 0.05, Same, 0.03},
		{"latency up, no tolerance", metric.LatencyP50, time.Millisecond, 1030 * time.Microsecond, 0, Worse, 0.03},
		{"errors from none", metric.Errors, 0, 1, 0.05, Worse, math.Inf(1)},
		{"errors to none", metric.Errors, 2, 0, 0.05, Better, -1},
		{"no loss either", metric.LossRate, 0.0, 0.0, 0.05, Same, 0},
		{"loss appears", metric.LossRate, 0.0, 0.001, 10, Worse, math.Inf(1)},
		{"no samples in B", metric.AckP99, time.Millisecond, nil, 0.05, Worse, math.NaN()},
		{"no samples in A", metric.AckP99, nil, time.Millisecond, 0.05, Same, math.NaN()},
		{"no samples in either", metric.AckP99, nil, nil, 0.05, Same, math.NaN()},
		{"rate not finite in B", metric.RecvRate, 800.0, math.NaN(), 0.05, Worse, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := metric.Set{}, metric.Set{}
			if tt.a != nil {
				a[tt.metric] = tt.a
			}
			if tt.b != nil {
				b[tt.metric] = tt.b
			}
			rows := compareSets(a, b, tt.tol, nil)
			var row *CompareRow
			for i := range rows {
				if rows[i].Metric == tt.metric {
					row = &rows[i]
				}
			}
			if row == nil {
				t.Fatalf("no row for %s", tt.metric)
			}
			if row.Mark != tt.want {
				t.Errorf("mark %q, want %q", row.Mark, tt.want)
			}
			if !(math.IsNaN(tt.change) && math.IsNaN(row.Change)) && math.Abs(row.Change-tt.change) > 1e-9 && row.Change != tt.change {
				t.Errorf("change %v, want %v", row.Change, tt.change)
			}
			for _, r := range rows {
				if r.Metric != tt.metric && r.Mark != Same {
					t.Errorf("%s marked %q with no values", r.Metric, r.Mark)
				}
			}
		})
	}
}

// compareCases are the comparisons whose tables are pinned.
func compareCases(t *testing.T) []struct {
	name string
	c    *Comparison
} {
	runs := map[string]*Result{}
	for _, tc := range goldenCases(t) {
		runs[tc.name] = tc.r
	}
	// slower: the failing run with end-to-end latency doubled and
	// acknowledgements faster.
	st := fullStats(t)
	ph := st.Phase(phase.Steady)
	ph.Groups[0].Latency = hist(t, 2000, 7900, 3000, 83, 4000, 10)
	ph.Groups[1].Ack = hist(t, 150, 7900, 350, 98)
	ph.Total.Latency, ph.Total.Ack = ph.Groups[0].Latency, ph.Groups[1].Ack
	fail := testPlan("p99 < 10ms")
	slower := Evaluate(fail, withBuiltins(t, fail), st)
	// renamed: the publishers are another group, over a longer run.
	renamed := testPlan("p99 < 10ms")
	renamed.Name = "1to1-qos1-v2"
	renamed.Groups[1].Name = "pub-v2"
	st = fullStats(t)
	st.Groups[1].Name = "pub-v2"
	st.Phase(phase.Steady).End += 10 * time.Second
	other := Evaluate(renamed, withBuiltins(t, renamed), st)
	return []struct {
		name string
		c    *Comparison
	}{
		{"same", Compare(runs["fail"], runs["fail"], "a.json", "b.json", DefaultTolerance)},
		{"pass-to-fail", Compare(runs["pass"], runs["fail"], "last-release.json", "now.json", DefaultTolerance)},
		{"slower", Compare(runs["fail"], slower, "before.json", "after.json", 0.10)},
		{"to-incomplete", Compare(runs["pass"], runs["incomplete"], "pass.json", "incomplete.json", DefaultTolerance)},
		{"other-groups", Compare(runs["fail"], other, "v1.json", "v2.json", DefaultTolerance)},
	}
}

func TestGoldenComparison(t *testing.T) {
	for _, tc := range compareCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteComparison(&b, tc.c); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(goldenDir, "compare-"+tc.name+".txt"), b.Bytes())
			b.Reset()
			if err := WriteComparisonJSON(&b, tc.c); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(goldenDir, "compare-"+tc.name+".json"), b.Bytes())
		})
	}
}

// TestCompareSummary: the verdict line names every worse change and
// nothing else.
func TestCompareSummary(t *testing.T) {
	for _, tc := range compareCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			worse := 0
			for _, s := range tc.c.Sections {
				for _, r := range s.Rows {
					if r.Mark == Worse {
						worse++
					}
				}
			}
			if got := len(tc.c.Worse()); got != worse {
				t.Errorf("Worse() lists %d, %d rows are marked", got, worse)
			}
			if tc.name == "same" && worse != 0 {
				t.Errorf("a run compared with itself has %d worse changes", worse)
			}
		})
	}
}

// TestComparePlanDifferences checks the note for two runs of one plan
// name with different settings: what changes the figures is named, what
// does not (file, description, thresholds) is not.
func TestComparePlanDifferences(t *testing.T) {
	load := func(t *testing.T, sets ...string) *Result {
		t.Helper()
		p, err := plans.LoadBytes("p.yaml", []byte(`
name: same
description: first
groups:
  - name: sub
    subscribe: {topic: "t/%i", qos: 1}
  - name: pub
    publish: {topic: "t/%i", qos: 1, every: 100ms}
duration: 2s
thresholds: ["p99 < 1s"]
`), plans.LoadOptions{Sets: sets})
		if err != nil {
			t.Fatal(err)
		}
		return Evaluate(p, nil, nil)
	}
	tests := []struct {
		name string
		sets []string
		want string // the note, "" for none
	}{
		{"the same plan: no note", nil, ""},
		{"description and thresholds only: no note", []string{"description=second", "thresholds[0]=p99 < 2s"}, ""},
		{"a group's rate and the other's QoS", []string{"groups.pub.publish.every=50ms", "groups.sub.subscribe.qos=0"},
			"A and B ran plan same with different settings: group sub, group pub"},
		{"the broker and the duration", []string{"broker.url=mqtt://127.0.0.1:1883", "duration=3s"},
			"A and B ran plan same with different settings: broker, duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(load(t), load(t, tt.sets...), "a.json", "b.json", DefaultTolerance)
			var got string
			for _, n := range c.Notes {
				if strings.Contains(n, "different settings") || strings.Contains(n, "different plans") {
					got = n
				}
			}
			if got != tt.want {
				t.Errorf("note %q, want %q (all notes: %q)", got, tt.want, c.Notes)
			}
		})
	}
}

// TestCompareBrokerCounters: the total shows the broker's own counters
// when both runs measured them (more drops marked worse, the PUBLISH
// counts shown but never marked), and not when one run lacks them.
func TestCompareBrokerCounters(t *testing.T) {
	p := testPlan()
	run := func(dropped int64, counters bool) *Result {
		st := fullStats(t)
		st.CountersEnd.Put(brokerstat.Dropped, dropped)
		st.CountersEnd.Put(brokerstat.PublishReceived, 1000+8000*dropped)
		if !counters {
			st.CountersStart, st.CountersEnd = brokerstat.Counters{}, brokerstat.Counters{}
			for i := range st.Timeline {
				st.Timeline[i].Counters = brokerstat.Counters{}
			}
		}
		return Evaluate(p, compile(t, p), st)
	}
	rows := func(c *Comparison) map[metric.Name]CompareRow {
		m := map[metric.Name]CompareRow{}
		for _, r := range c.Sections[0].Rows {
			m[r.Metric] = r
		}
		return m
	}
	tests := []struct {
		name       string
		a, b       *Result
		want       map[metric.Name]Mark // rows that must be there, with their mark
		wantAbsent []metric.Name
	}{
		{name: "both measured", a: run(7, true), b: run(50, true),
			want: map[metric.Name]Mark{metric.BrokerDropped: Worse, metric.BrokerPublishReceived: Same, metric.BrokerPublishSent: Same}},
		{name: "one without", a: run(7, true), b: run(7, false),
			wantAbsent: []metric.Name{metric.BrokerDropped, metric.BrokerPublishReceived, metric.BrokerMemoryMax}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.a, tt.b, "a.json", "b.json", DefaultTolerance)
			got := rows(c)
			back := readBackComparison(t, c)
			for m, mark := range tt.want {
				for which, rs := range map[string]map[metric.Name]CompareRow{"compared": got, "read back": rows(back)} {
					r, ok := rs[m]
					if !ok || r.Mark != mark {
						t.Errorf("%s: %s: row %+v (%v), want mark %v", which, m, r, ok, mark)
					}
				}
			}
			for _, m := range tt.wantAbsent {
				if r, ok := got[m]; ok {
					t.Errorf("%s: row %+v, want none", m, r)
				}
			}
		})
	}
}

// readBackComparison is c as a baseline comparison saved in a result and
// read back.
func readBackComparison(t *testing.T, c *Comparison) *Comparison {
	t.Helper()
	data, err := json.Marshal(c.doc())
	if err != nil {
		t.Fatal(err)
	}
	var d jsonComparison
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	back, err := d.comparison()
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	return back
}
