package plans

import (
	"strings"
	"testing"
)

// TestLoadBrokerMetrics: broker.metrics names the broker process by pid
// or by name, exactly one; everything else is a positioned problem.
func TestLoadBrokerMetrics(t *testing.T) {
	plan := func(metrics string) string {
		return "name: t\nbroker:\n  url: mqtt://127.0.0.1:1883\n  metrics: " + metrics + "\n" +
			"groups:\n  - {name: pub, count: 1, publish: {topic: t, every: 1s}}\nduration: 1s\n"
	}
	tests := []struct {
		name    string
		metrics string
		want    *BrokerMetrics
		wantErr string // a line of the error; "" means valid
	}{
		{name: "absent", metrics: "null", want: nil},
		{name: "pid", metrics: "{pid: 1234}", want: &BrokerMetrics{PID: 1234}},
		{name: "process", metrics: "{process: mosquitto}", want: &BrokerMetrics{Process: "mosquitto"}},
		{name: "both", metrics: "{pid: 1, process: mosquitto}", wantErr: "plan.yaml:4:21: broker.metrics.process: set either pid or process, not both"},
		{name: "neither", metrics: "{}", wantErr: `broker.metrics: missing "pid" or "process"`},
		{name: "pid zero", metrics: "{pid: 0}", wantErr: "broker.metrics.pid: must be at least 1, got 0"},
		{name: "pid too large", metrics: "{pid: 99999999}", wantErr: "broker.metrics.pid: must be at most 4194304"},
		{name: "pid not a number", metrics: "{pid: mosquitto}", wantErr: "broker.metrics.pid: must be"},
		{name: "process is a path", metrics: "{process: /usr/sbin/mosquitto}", wantErr: "broker.metrics.process: must be a process's command name"},
		{name: "process too long", metrics: "{process: " + strings.Repeat("a", 300) + "}", wantErr: "broker.metrics.process: must be a process's command name"},
		{name: "unknown key", metrics: "{port: 1}", wantErr: "broker.metrics"},
		{name: "not a mapping", metrics: "[1]", wantErr: "broker.metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadBytes("plan.yaml", []byte(plan(tt.metrics)), LoadOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "broker.metrics", p.Broker.Metrics, tt.want)
		})
	}
}
