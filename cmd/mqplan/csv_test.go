package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mqplan/mqplan/procstat"
)

// csvPlan runs on the embedded broker with three groups, one of which
// receives every message of the other subscriber's topics, so that the
// timeline's groups differ: pub sends, sub and all receive.
const csvPlan = `name: csv-e2e
broker:
  connect_timeout: 5s
groups:
  - name: sub
    count: 2
    subscribe: {topic: "csv/%i", qos: 1}
  - name: all
    count: 1
    subscribe: {topic: "csv/+", qos: 0}
  - name: pub
    count: 2
    publish: {topic: "csv/%i", qos: 1, size: 64B, every: 20ms}
duration: 2s
drain: 2s
thresholds:
  - loss_rate == 0
`

// TestCSVTimeline: `mqplan run --out csv=FILE` of a real run writes, for
// every second, a total row and a row per group, and the rows account
// exactly: each second's groups add up to its total, and each group's
// seconds add up to what the JSON result says it sent and received over
// the run (every message of this plan is sent in the steady phase, whose
// per-group figures the JSON holds; the run's totals are its phases').
func TestCSVTimeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writePlan(t, csvPlan)
	csvPath, jsonPath := filepath.Join(dir, "timeline.csv"), filepath.Join(dir, "result.json")
	r := runCmd(t, "run", "--quiet", "--out", "csv="+csvPath, "--out", "json="+jsonPath, plan)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v", err)
	}
	header := []string{"at_s", "phase", "group", "sent", "received", "send_rate", "recv_rate",
		"p50_ms", "p99_ms", "max_ms", "connected", "errors", "disconnects", "lag_max_ms",
		"broker_cpu_percent", "broker_rss_bytes", "mqplan_cpu_percent", "mqplan_rss_bytes",
		"broker_clients", "broker_publish_received", "broker_publish_sent", "broker_dropped",
		"broker_memory_bytes", "broker_subscriptions", "mqplan_cpu_wait_ms", "mqplan_busy", "cpu_pressure_ms"}
	if len(rows) == 0 || !slices.Equal(rows[0], header) {
		t.Fatalf("header %v, want %v", rows[0], header)
	}
	col := func(name string) int { return slices.Index(header, name) }
	num := func(row []string, name string) int64 {
		t.Helper()
		n, err := strconv.ParseInt(row[col(name)], 10, 64)
		if err != nil {
			t.Fatalf("row %v: %s: %v", row, name, err)
		}
		return n
	}

	var doc struct {
		Metrics struct {
			Groups map[string]map[string]any `json:"groups"`
			Phases map[string]map[string]any `json:"phases"`
		} `json:"metrics"`
		Timeline []json.RawMessage `json:"timeline"`
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}

	groups := []string{"total", "sub", "all", "pub"}
	body := rows[1:]
	if len(body) == 0 || len(body)%len(groups) != 0 || len(body)/len(groups) != len(doc.Timeline) {
		t.Fatalf("%d rows for %d seconds, want %d a second", len(body), len(doc.Timeline), len(groups))
	}
	type counts struct{ sent, received int64 }
	sums := map[string]counts{}
	steadyRows := 0
	prevAt := 0.0 // the previous second's at_s
	for i := 0; i < len(body); i += len(groups) {
		second := body[i : i+len(groups)]
		var groupSum [4]int64 // sent, received, connected, errors
		for j, row := range second {
			if row[col("group")] != groups[j] || row[col("at_s")] != second[0][col("at_s")] || row[col("phase")] != second[0][col("phase")] {
				t.Fatalf("second at %s: row %d is %v, want group %s of the same second", second[0][0], j, row, groups[j])
			}
			c := sums[groups[j]]
			c.sent += num(row, "sent")
			c.received += num(row, "received")
			sums[groups[j]] = c
			if j > 0 {
				groupSum[0] += num(row, "sent")
				groupSum[1] += num(row, "received")
				groupSum[2] += num(row, "connected")
				groupSum[3] += num(row, "errors")
			}
			// No samples, no figure: a group that received nothing this
			// second has no latency, one that sent nothing no lag.
			if (num(row, "received") == 0) != (row[col("p99_ms")] == "") {
				t.Errorf("row %v: received and p99_ms disagree", row)
			}
			if (num(row, "sent") == 0) != (row[col("lag_max_ms")] == "") {
				t.Errorf("row %v: sent and lag_max_ms disagree", row)
			}
		}
		total := second[0]
		// The processes' figures: on the embedded broker, mqplan's own
		// only (no broker.metrics), on the total row only; every second
		// of a run on Linux is sampled, but one shorter than
		// procstat.MinCPUWindow (the last, partial one), which has
		// neither figure (the bounds leave the sampler's clock, read just
		// after the second's, a few ms of leeway).
		for _, c := range []string{"broker_cpu_percent", "broker_rss_bytes"} {
			if total[col(c)] != "" {
				t.Errorf("second at %s: %s %q without broker.metrics", total[0], c, total[col(c)])
			}
		}
		at, _ := strconv.ParseFloat(total[col("at_s")], 64)
		window := time.Duration((at - prevAt) * float64(time.Second))
		prevAt = at
		switch {
		case window < procstat.MinCPUWindow-5*time.Millisecond:
			if total[col("mqplan_cpu_percent")] != "" || total[col("mqplan_rss_bytes")] != "" {
				t.Errorf("second at %s, %v long: mqplan_cpu_percent %q, mqplan_rss_bytes %q: want none", total[0], window, total[col("mqplan_cpu_percent")], total[col("mqplan_rss_bytes")])
			}
		case window < procstat.MinCPUWindow+5*time.Millisecond:
		default:
			if cpu, err := strconv.ParseFloat(total[col("mqplan_cpu_percent")], 64); err != nil || cpu < 0 || num(total, "mqplan_rss_bytes") < 1<<20 {
				t.Errorf("second at %s: mqplan_cpu_percent %q, mqplan_rss_bytes %q: want a CPU >= 0 and more than 1 MiB", total[0], total[col("mqplan_cpu_percent")], total[col("mqplan_rss_bytes")])
			}
		}
		for _, row := range second[1:] {
			if slices.ContainsFunc(row[col("broker_cpu_percent"):], func(c string) bool { return c != "" }) {
				t.Errorf("group row %v has a process's figures", row)
			}
		}
		if want := [4]int64{num(total, "sent"), num(total, "received"), num(total, "connected"), num(total, "errors")}; groupSum != want {
			t.Errorf("second at %s: groups add up to %v (sent, received, connected, errors), the total row says %v", total[0], groupSum, want)
		}
		if total[col("phase")] == "steady" {
			steadyRows++
			if num(second[1], "connected") != 2 || num(second[2], "connected") != 1 || num(second[3], "connected") != 2 {
				t.Errorf("steady second at %s: connected %s/%s/%s, want 2/1/2", total[0], second[1][col("connected")], second[2][col("connected")], second[3][col("connected")])
			}
		}
	}
	if steadyRows == 0 {
		t.Error("no steady second in the timeline")
	}

	jnum := func(m map[string]any, key string) int64 {
		t.Helper()
		v, ok := m[key].(float64)
		if !ok {
			t.Fatalf("JSON metric %s: %v", key, m[key])
		}
		return int64(v)
	}
	var run counts
	for _, ph := range doc.Metrics.Phases {
		run.sent += jnum(ph, "sent")
		run.received += jnum(ph, "received")
	}
	g := doc.Metrics.Groups
	for _, tc := range []struct {
		name string
		got  counts
		want counts
	}{
		{"total", sums["total"], run},
		{"sub", sums["sub"], counts{0, jnum(g["sub"], "received")}},
		{"all", sums["all"], counts{0, jnum(g["all"], "received")}},
		{"pub", sums["pub"], counts{jnum(g["pub"], "sent"), 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want || tc.want.sent+tc.want.received == 0 {
				t.Errorf("the CSV adds up to %+v, the run's figures are %+v", tc.got, tc.want)
			}
		})
	}
	if run.received != 2*run.sent {
		t.Errorf("sent %d received %d: want every message delivered twice (sub and all)", run.sent, run.received)
	}
}
