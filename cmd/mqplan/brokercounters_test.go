package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// TestBrokerCountersMosquitto: with broker.metrics.sys against a real
// Mosquitto updating $SYS every second, the run reports the broker's own
// counters (the Broker section; the thresholds on them judged both ways),
// its PUBLISH-received change is exactly mqplan's sent count, the
// cross-check finds nothing to warn about, and a saved result re-renders
// the section.
func TestBrokerCountersMosquitto(t *testing.T) {
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	metrics := "  metrics: {sys: true}\n"
	tests := []struct {
		name       string
		thresholds []string
		code       int
	}{
		{name: "judged and passing", thresholds: []string{"broker.dropped == 0", "broker.publish.received == sent", "broker.publish.sent >= received", "broker.clients.max >= 5"}},
		{name: "a threshold on them fails", thresholds: []string{"broker.publish.received < 1"}, code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, top := savedMetrics(t, procPlan(p.MQTT, metrics, tt.thresholds...))
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, tt.code, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stdout, "Broker (its own counters") || !strings.Contains(res.stdout, "| publish_received |") {
				t.Errorf("the table has no Broker section:\n%s", res.stdout)
			}
			if strings.Contains(res.stdout, "the broker counted") {
				t.Errorf("a clean run against Mosquitto warns:\n%s", res.stdout)
			}
			if recv, sent := top["broker.publish.received"], top["sent"]; recv == nil || recv != sent {
				t.Errorf("broker.publish.received %v, want mqplan's sent %v", recv, sent)
			}
		})
	}
}

// TestBrokerCountersAbsent: without broker.metrics sys or prometheus the
// broker's counters are absent, so a threshold on them fails with a
// reason instead of passing on nothing.
func TestBrokerCountersAbsent(t *testing.T) {
	res, top := savedMetrics(t, procPlan("embedded", "", "broker.dropped == 0"))
	if res.code != 1 || !strings.Contains(res.stdout, "no samples for broker.dropped") {
		t.Fatalf("exit %d, want 1 with no samples for broker.dropped\n%s%s", res.code, res.stdout, res.stderr)
	}
	if _, ok := top["broker.dropped"]; ok {
		t.Error("broker.dropped measured without broker.metrics")
	}
}

// TestBrokerCountersEmbeddedRerender: the embedded broker with sys: true
// reports its counters, and `mqplan report` re-renders the saved result's
// Broker section in Markdown.
func TestBrokerCountersEmbeddedRerender(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "r.json")
	res := runCmd(t, "run", "--quiet", "--out", "json="+saved, writePlan(t, procPlan("embedded", "  metrics: {sys: true}\n", "broker.publish.received == sent")))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout+res.stderr, "counted") {
		t.Errorf("the cross-check warns on a clean embedded run:\n%s%s", res.stdout, res.stderr)
	}
	md := filepath.Join(dir, "r.md")
	if res := runCmd(t, "report", "--out", "md="+md, saved); res.code != 0 {
		t.Fatalf("report: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "### Broker") || !strings.Contains(string(b), "| publish_received |") {
		t.Errorf("the re-rendered summary has no Broker section:\n%s", b)
	}
}
