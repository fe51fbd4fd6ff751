package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/promtest"
)

// TestMetricsPushToPrometheus: `run --metrics-push` against a real
// Prometheus with its remote-write receiver: after the run, Prometheus
// holds the run's series under one run_id, each group's counters equal
// the run's totals in its saved result, every threshold is there and
// passed, and the run and build info are there.
func TestMetricsPushToPrometheus(t *testing.T) {
	t.Parallel()
	prom := promtest.Start(t)
	saved := filepath.Join(t.TempDir(), "result.json")
	r := runCmd(t, "run", "--metrics-push", prom.WriteURL, "--metrics-push-interval", "1s", "--out", "json="+saved,
		"--set", "warmup=1s", "--set", "duration=2s", "testdata/cli/pass.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
	}
	info := prom.Query(t, "mqplan_run_info")
	if len(info) != 1 || info[0].Labels["run_id"] == "" || info[0].Labels["job"] != "mqplan" {
		t.Fatalf("mqplan_run_info: %+v, want one series with a run_id and job=mqplan\n%s", info, prom.Logs())
	}
	runID := info[0].Labels["run_id"]
	if !strings.Contains(r.stderr, "run_id "+runID) {
		t.Errorf("stderr does not say the run_id %s:\n%s", runID, r.stderr)
	}
	res := savedResult(t, saved)
	totals := map[string]map[string]int64{} // metric → group → the run's total
	add := func(metric, group string, n int64) {
		if totals[metric] == nil {
			totals[metric] = map[string]int64{}
		}
		totals[metric][group] += n
	}
	for _, s := range res.Timeline {
		for _, g := range s.Groups {
			add("mqplan_messages_sent_total", g.Group, g.Sent)
			add("mqplan_messages_acked_total", g.Group, g.Acked)
			add("mqplan_messages_received_total", g.Group, g.Received)
			add("mqplan_messages_duplicated_total", g.Group, g.Duplicates)
			add("mqplan_errors_total", g.Group, g.Errors)
			add("mqplan_disconnects_total", g.Group, g.Disconnects)
		}
	}
	if totals["mqplan_messages_sent_total"]["pub"] == 0 || totals["mqplan_messages_received_total"]["sub"] == 0 {
		t.Fatalf("the run sent or received nothing: %v", totals)
	}
	for metric, groups := range totals {
		for group, want := range groups {
			q := fmt.Sprintf("%s{run_id=%q,group=%q}", metric, runID, group)
			got := prom.Query(t, q)
			if len(got) != 1 || got[0].Value != float64(want) {
				t.Errorf("%s = %+v, the run's total is %d", q, got, want)
			}
		}
	}
	// The JSON result's per-phase figures, added up, are the run's
	// totals over all phases, which the counters are.
	data, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Metrics struct {
			Phases map[string]map[string]any `json:"phases"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for key, metric := range map[string]string{"sent": "mqplan_messages_sent_total", "received": "mqplan_messages_received_total",
		"acked": "mqplan_messages_acked_total", "duplicates": "mqplan_messages_duplicated_total", "errors": "mqplan_errors_total",
		"sent_bytes": "mqplan_payload_sent_bytes_total", "received_bytes": "mqplan_payload_received_bytes_total"} {
		var want float64
		for _, ph := range doc.Metrics.Phases {
			v, _ := ph[key].(float64)
			want += v
		}
		q := fmt.Sprintf("sum(%s{run_id=%q})", metric, runID)
		got := prom.Query(t, q)
		if len(got) != 1 || got[0].Value != want || key == "sent_bytes" && want == 0 {
			t.Errorf("%s = %+v, the JSON result's phases add up to %s %v", q, got, key, want)
		}
	}
	passed := prom.Query(t, fmt.Sprintf("mqplan_threshold_passed{run_id=%q}", runID))
	if len(passed) != len(res.Thresholds) || len(passed) == 0 {
		t.Errorf("%d threshold series, the run has %d thresholds", len(passed), len(res.Thresholds))
	}
	for _, p := range passed {
		if p.Value != 1 {
			t.Errorf("threshold %q: %v in Prometheus, the run passed it", p.Labels["threshold"], p.Value)
		}
	}
	if b := prom.Query(t, fmt.Sprintf("mqplan_build_info{run_id=%q}", runID)); len(b) != 1 || b[0].Labels["goversion"] == "" {
		t.Errorf("mqplan_build_info: %+v", b)
	}
}

// TestMetricsPushChecked: a push URL or interval that cannot work is exit
// 2 before anything connects, and no message shows the URL's password; a
// receiver that refuses the final push makes the run exit 3.
func TestMetricsPushChecked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		code      int
		stderrHas string
	}{
		{name: "not http", args: []string{"--metrics-push", "ftp://bob:s3cret@127.0.0.1/x"}, code: 2,
			stderrHas: "--metrics-push: ftp://bob:***@127.0.0.1/x: want an http:// or https:// URL"},
		{name: "interval too short", args: []string{"--metrics-push", "http://127.0.0.1:1/w", "--metrics-push-interval", "10ms"}, code: 2,
			stderrHas: "--metrics-push-interval 10ms: from 1s to 10m0s"},
		{name: "interval without push", args: []string{"--metrics-push-interval", "2s"}, code: 2,
			stderrHas: "--metrics-push-interval 2s: there is nothing to push without --metrics-push"},
		{name: "workers", args: []string{"--workers", "2", "--metrics-push", "http://127.0.0.1:1/w"}, code: 2,
			stderrHas: "--workers with --metrics-listen or --metrics-push: not supported yet"},
		{name: "nobody listens", args: []string{"--metrics-push", "http://bob:s3cret@127.0.0.1:1/api/v1/write"}, code: 3,
			stderrHas: "--metrics-push: push to http://bob:***@127.0.0.1:1/api/v1/write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run"}, tt.args...)
			r := runCmd(t, append(args, "--set", "duration=1s", "testdata/cli/pass.yaml")...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderrHas) {
				t.Errorf("exit %d, want %d; stderr should have %q:\n%s", r.code, tt.code, tt.stderrHas, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "s3cret") {
				t.Errorf("the password shows:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}
