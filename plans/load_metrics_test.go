package plans

import (
	"strings"
	"testing"
)

// TestLoadBrokerMetrics: broker.metrics takes $SYS, the broker process by
// pid or by name (not both) and a Prometheus URL, at least one;
// everything else is a positioned problem that shows no secret.
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
		never   string // what the error must not say
	}{
		{name: "absent", metrics: "null", want: nil},
		{name: "pid", metrics: "{pid: 1234}", want: &BrokerMetrics{PID: 1234}},
		{name: "process", metrics: "{process: mosquitto}", want: &BrokerMetrics{Process: "mosquitto"}},
		{name: "sys", metrics: "{sys: true}", want: &BrokerMetrics{Sys: true}},
		{name: "prometheus", metrics: "{prometheus: 'http://127.0.0.1:18083/api/v5/prometheus/stats'}", want: &BrokerMetrics{Prometheus: "http://127.0.0.1:18083/api/v5/prometheus/stats"}},
		{name: "all three kinds", metrics: "{sys: true, process: mosquitto, prometheus: 'https://b:9/m'}", want: &BrokerMetrics{Sys: true, Process: "mosquitto", Prometheus: "https://b:9/m"}},
		{name: "sys false with a pid", metrics: "{sys: false, pid: 7}", want: &BrokerMetrics{PID: 7}},
		{name: "both", metrics: "{pid: 1, process: mosquitto}", wantErr: "plan.yaml:4:21: broker.metrics.process: set either pid or process, not both"},
		{name: "neither", metrics: "{}", wantErr: `broker.metrics: missing "sys", "pid", "process" or "prometheus"`},
		{name: "sys false alone", metrics: "{sys: false}", wantErr: "plan.yaml:4:12: broker.metrics: nothing to sample"},
		{name: "sys not a bool", metrics: "{sys: yes please}", wantErr: "broker.metrics.sys: "},
		{name: "prometheus not http", metrics: "{prometheus: 'mqtt://b:1883'}", wantErr: "plan.yaml:4:25: broker.metrics.prometheus: must be an http:// or https:// URL"},
		{name: "prometheus no host", metrics: "{prometheus: 'http:///metrics'}", wantErr: "broker.metrics.prometheus: must be an http:// or https:// URL"},
		{name: "prometheus not a URL", metrics: "{prometheus: '%zz'}", wantErr: "broker.metrics.prometheus: must be an http:// or https:// URL"},
		{name: "prometheus too long", metrics: "{prometheus: 'http://h/" + strings.Repeat("a", 3000) + "'}", wantErr: "broker.metrics.prometheus: must be a URL of at most 2048 characters"},
		{name: "prometheus secret not echoed", metrics: "{prometheus: 'ftp://user:hunter2@h/m?token=s3cr3t'}", wantErr: "ftp://***@h/m?token=***"},
		{name: "sys 'yes' alone", metrics: "{sys: 'yes'}", wantErr: `broker.metrics.sys: must be true or false, got "yes"`, never: "sys is false"},
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
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cr3t") {
					t.Fatalf("err = %v shows a secret", err)
				}
				if tt.never != "" && strings.Contains(err.Error(), tt.never) {
					t.Fatalf("err = %v, want none saying %q", err, tt.never)
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
