package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadJSONRefusesImpossibleFigures: a hand-edited result with a
// figure no run gives is refused with one line naming its JSON path,
// rather than rendered or used as a baseline.
func TestReadJSONRefusesImpossibleFigures(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, goldenCases(t)[0].r); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	if _, err := ReadJSON(strings.NewReader(good)); err != nil {
		t.Fatalf("the unedited fixture is refused: %v", err)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"negative count", `"received": 7993,`, `"received": -1,`, "metrics.top.received: -1 is negative"},
		{"huge count", `"received": 7993,`, `"received": 1e308,`, "metrics.top: received: bad count 1e308"},
		{"huge rate", `"send_rate": 800,`, `"send_rate": 1e308,`, "metrics.top.send_rate: 1e+308 is beyond any measurement"},
		{"negative rate", `"send_rate": 800,`, `"send_rate": -800,`, "metrics.top.send_rate: -800 is negative"},
		{"NaN-like string for a rate", `"send_rate": 800,`, `"send_rate": "NaN",`, "metrics.top: send_rate: a string for a rate"},
		{"NaN-like string for a duration", `"elapsed": "11.7s"`, `"elapsed": "NaN"`, `bad duration "NaN"`},
		{"fraction above 1", `"loss_rate": 0.00125,`, `"loss_rate": 1.5,`, "metrics.top.loss_rate: 1.5 is not a share between 0 and 1"},
		{"negative fraction", `"loss_rate": 0.00125,`, `"loss_rate": -0.1,`, "metrics.top.loss_rate: -0.1 is not a share between 0 and 1"},
		{"fraction in a threshold value", `"value": 0.0003753284123608157,`, `"value": 2,`, "thresholds[0].values[1].value: 2 is not a share between 0 and 1"},
		{"received beyond expected", `"expected": 8000,`, `"expected": 7000,`, "metrics.top.received: 7993 deliveries (3 of them duplicates) received of 7000 expected"},
		{"p50 above p99", `"latency.p50": "1ms",`, `"latency.p50": "1.6ms",`, "metrics.top.latency.p90: 1ms is below latency.p50 1.6ms"},
		{"p99 above max in the latency table", `"p99": "1.5ms",
      "p999": "2ms",`, `"p99": "3ms",
      "p999": "2ms",`, "latency[0].p999: 2ms is below p99 3ms"},
		{"mean outside min and max", `"mean": "1.006443ms",`, `"mean": "9ms",`, "latency[0].mean: 9ms is outside min 1ms and max 2ms"},
		{"negative duration", `"elapsed": "11.7s"`, `"elapsed": "-1s"`, "elapsed: -1s is negative"},
		{"negative plan duration", `"connect_rate": 500,`, `"connect_rate": -5,`, "plan.groups[0].connect_rate: -5 is negative"},
		{"phase ending before it starts", `"start": "1s",
      "end": "1.1s",`, `"start": "1s",
      "end": "0.5s",`, "phases[1].end: 500ms is before its start 1s"},
		{"timeline out of order", `"at": "2s",`, `"at": "0.5s",`, "timeline[1].at: 500ms is before the previous second's 1s"},
		{"timeline beyond elapsed", `"at": "1s",`, `"at": "12s",`, "timeline[0].at: 12s is after the run's end (elapsed 11.7s)"},
		{"negative count in a second", `"received": 799,`, `"received": -799,`, "timeline[0].received: -799 is negative"},
		{"percentile out of range", `"percentile": 12.944944,`, `"percentile": 101,`, "distributions[0].points[1].percentile: 101 is not a percentile between 0 and 100"},
		{"more connected than clients", `"connected": 4,
      "connected_at_end"`, `"connected": 40,
      "connected_at_end"`, "groups[0].connected: 40 clients connected of the 4 the group has"},
		{"huge CPU", `"cpu_percent": 20,`, `"cpu_percent": 1e308,`, "timeline[0].broker.cpu_percent: 1e+308 is beyond any measurement"},
		{"negative broker counter", `"messages_dropped": 7,`, `"messages_dropped": -7,`, "broker.messages_dropped: -7 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(good, tt.old) {
				t.Fatalf("fixture lacks %q", tt.old)
			}
			doc := strings.Replace(good, tt.old, tt.new, 1)
			r, err := ReadJSON(strings.NewReader(doc))
			if err == nil {
				t.Fatalf("read a result (%s), want an error with %q", r.Verdict(), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q\nwant one line with %q", err, tt.want)
			}
		})
	}
}
