package report

import (
	"fmt"
	"testing"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// withRequests adds request/response figures to st's steady phase: the
// publishing group (1) requests, the subscribing group (0) answers.
func withRequests(t testing.TB, st *stats.Stats) *stats.Stats {
	ph := st.Phase(phase.Steady)
	req := stats.ReqResp{Requests: 100, Expected: 100, Responses: 97, Late: 1, Duplicates: 1, Timeouts: 3, RTT: hist(t, 2000, 97, 9000, 1)}
	ans := stats.ReqResp{Sent: 99}
	ph.Groups[1].ReqResp.Merge(&req)
	ph.Groups[0].ReqResp.Merge(&ans)
	ph.Total.ReqResp.Merge(&req)
	ph.Total.ReqResp.Merge(&ans)
	return st
}

// TestReqRespValues checks the request/response metrics of a scope: the
// counts as measured, rtt from its histogram, and none at all in a scope
// without request/response (a threshold there fails, never passes on 0).
func TestReqRespValues(t *testing.T) {
	st := withRequests(t, fullStats(t))
	env := Environment(testPlan(), st)
	tests := []struct {
		name   string
		scope  string
		metric string
		want   any
	}{
		{"requests at the requesting group", "pub", "requests", 100},
		{"timeouts: expected minus on time", "pub", "rtt.timeouts", 3},
		{"late answers", "pub", "responses_late", 1},
		{"answers sent at the responders", "sub", "responses_sent", 99},
		{"no requests at the responders", "sub", "requests", nil},
		{"no rtt at the responders", "sub", "rtt.p99", nil},
		{"whole run", "", "responses", 97},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := env.Top
			if tt.scope != "" {
				set = env.Groups[tt.scope]
			}
			got, ok := set[metric.Name(tt.metric)]
			if tt.want == nil {
				if ok {
					t.Errorf("%s = %v, want absent", tt.metric, got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("%s = %v (%T), want %v", tt.metric, got, got, tt.want)
			}
		})
	}
	if rows := rttRows(st); len(rows) != 1 || rows[0].Samples != 98 || rows[0].Max < 8900*1000 {
		t.Errorf("rtt rows %+v", rows)
	}
}

// TestRequestsTable checks the request/response section's cells: a row
// per group that requests or answers, and a total; none at all for a run
// without request/response, so that other reports keep their sections.
func TestRequestsTable(t *testing.T) {
	if rows := requestsCells(Evaluate(testPlan(), nil, fullStats(t))); rows != nil {
		t.Errorf("a run without request/response has the rows %q", rows)
	}
	rows := requestsCells(Evaluate(testPlan(), nil, withRequests(t, fullStats(t))))
	want := [][]string{
		{"sub", "-", "-", "-", "-", "-", "-", "99", "-", "-"},
		{"pub", "100", "100", "97", "1", "1", "3", "0", "2ms", "2ms"},
		{"total", "100", "100", "97", "1", "1", "3", "99", "2ms", "2ms"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("rows\n got %q\nwant %q", rows, want)
	}
}
