package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// procPlan is a short run against url whose broker section has extra
// (a broker.metrics block), judged by thresholds.
func procPlan(url, extra string, thresholds ...string) string {
	var th strings.Builder
	for _, s := range thresholds {
		th.WriteString("  - " + s + "\n")
	}
	return "name: procs\nbroker:\n  url: " + url + "\n" + extra +
		"groups:\n" +
		"  - {name: sub, count: 2, subscribe: {topic: p/%i, qos: 1}}\n" +
		"  - {name: pub, count: 2, publish: {topic: p/%i, qos: 1, every: 20ms}}\n" +
		"duration: 2s\ndrain: 1s\nthresholds:\n" + th.String()
}

// savedMetrics runs mqplan with a JSON result saved and returns the exit
// code, the output and the top-level metrics of the saved result.
func savedMetrics(t *testing.T, plan string) (result, map[string]any) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	res := runCmd(t, "run", "--quiet", "--out", "json="+out, "--out", "table=-", writePlan(t, plan))
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no saved result (exit %d): %v\n%s", res.code, err, res.stderr)
	}
	var doc struct {
		Metrics struct {
			Top map[string]any `json:"top"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return res, doc.Metrics.Top
}

// TestProcessMetricsMosquitto: with broker.metrics naming a real
// Mosquitto by its pid, the run samples it and thresholds on
// broker.cpu.* and broker.rss.max evaluate against plausible figures,
// both ways; a pid that does not exist makes the run incomplete (exit 3)
// with a line that says why.
func TestProcessMetricsMosquitto(t *testing.T) {
	t.Parallel()
	p := mosquittotest.StartProcess(t, mosquittotest.Options{})
	pid := strconv.Itoa(p.PID())
	metrics := "  metrics: {pid: " + pid + "}\n"

	t.Run("sampled and judged", func(t *testing.T) {
		res, top := savedMetrics(t, procPlan(p.MQTT, metrics,
			"broker.cpu.max >= 0", "broker.cpu.mean <= broker.cpu.max",
			"broker.rss.max > 1048576", "broker.rss.max < 2 * 1024 * 1024 * 1024",
			"self.rss.max > 1048576", "self.cpu.max > 0"))
		if res.code != 0 {
			t.Fatalf("exit %d, want 0\n%s%s", res.code, res.stdout, res.stderr)
		}
		rss, _ := top["broker.rss.max"].(float64)
		cpu, ok := top["broker.cpu.max"].(float64)
		if rss < 1<<20 || !ok || cpu < 0 {
			t.Errorf("broker.rss.max %v, broker.cpu.max %v: want more than 1 MB and a CPU >= 0", top["broker.rss.max"], top["broker.cpu.max"])
		}
		if !strings.Contains(res.stdout, "Processes (from /proc") || !strings.Contains(res.stdout, "| broker  |") {
			t.Errorf("the table has no Processes section with the broker:\n%s", res.stdout)
		}
	})
	t.Run("a threshold on them can fail", func(t *testing.T) {
		res, _ := savedMetrics(t, procPlan(p.MQTT, metrics, "broker.rss.max < 1024"))
		if res.code != 1 {
			t.Fatalf("exit %d, want 1 (threshold failed)\n%s%s", res.code, res.stdout, res.stderr)
		}
	})
	t.Run("a pid that does not exist", func(t *testing.T) {
		// The plan bounds pid to pid_max, so take a pid that is free: that
		// of a process that has exited (reused within the test: unlikely).
		res, top := savedMetrics(t, procPlan(p.MQTT, "  metrics: {pid: "+strconv.Itoa(exitedPID(t))+"}\n", "broker.cpu.max < 90"))
		if res.code != 3 {
			t.Fatalf("exit %d, want 3 (incomplete)\n%s%s", res.code, res.stdout, res.stderr)
		}
		if all := res.stdout + res.stderr; !strings.Contains(all, "broker.metrics: pid ") || !strings.Contains(all, "no such process") {
			t.Errorf("no clear line about the missing broker process:\n%s", all)
		}
		if _, ok := top["broker.cpu.max"]; ok {
			t.Errorf("broker.cpu.max %v measured without a broker process", top["broker.cpu.max"])
		}
	})
	t.Run("a process name nothing has", func(t *testing.T) {
		res, _ := savedMetrics(t, procPlan(p.MQTT, "  metrics: {process: mqplan-none-x}\n", "broker.cpu.max < 90"))
		if res.code != 3 || !strings.Contains(res.stdout+res.stderr, `broker.metrics: process "mqplan-none-x": no running process has that name`) {
			t.Fatalf("exit %d, want 3 with the name not found\n%s%s", res.code, res.stdout, res.stderr)
		}
	})
}

// TestProcessMetricsSelf: on the embedded broker, with no broker.metrics,
// mqplan's own CPU and memory are measured and the broker's are absent,
// so that a threshold on them fails rather than passes on nothing.
func TestProcessMetricsSelf(t *testing.T) {
	res, top := savedMetrics(t, procPlan("embedded", "", "self.rss.max > 1048576", "broker.cpu.max < 90"))
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (broker.cpu.max has no samples)\n%s%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, "no samples for broker.cpu.max") {
		t.Errorf("the failed threshold does not say why:\n%s", res.stdout)
	}
	if v, _ := top["self.rss.max"].(float64); v < 1<<20 {
		t.Errorf("self.rss.max = %v, want more than 1 MB", top["self.rss.max"])
	}
	if _, ok := top["self.cpu.max"]; !ok {
		t.Error("self.cpu.max absent")
	}
	if _, ok := top["broker.rss.max"]; ok {
		t.Error("broker.rss.max present without broker.metrics")
	}
}

// TestProcessMetricsSizes: a run judged by size literals, as issue 9
// writes them (self.rss.max < 2GiB), passes and fails on what it measured,
// shows its byte metrics in MiB as the table shows memory, and a broker
// figure scoped to a group is refused before anything connects.
func TestProcessMetricsSizes(t *testing.T) {
	t.Parallel()
	t.Run("judged by sizes", func(t *testing.T) {
		res, top := savedMetrics(t, procPlan("embedded", "", "self.rss.max > 1MiB and self.rss.max < 2GiB",
			"received_bytes / received <= 256B", "sent_bytes < 1KB"))
		if res.code != 1 {
			t.Fatalf("exit %d, want 1 (sent_bytes < 1KB fails)\n%s%s", res.code, res.stdout, res.stderr)
		}
		if v, _ := top["self.rss.max"].(float64); v < 1<<20 {
			t.Errorf("self.rss.max = %v, want more than 1 MiB", top["self.rss.max"])
		}
		for _, want := range []string{"PASS", "FAIL: 1 of 3 thresholds failed"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("the table lacks %q:\n%s", want, res.stdout)
			}
		}
		if !strings.Contains(res.stdout, " MiB") || !strings.Contains(res.stdout, "self.rss.max=") || strings.Contains(res.stdout, "received_bytes="+strconv.Itoa(int(top["received_bytes"].(float64)))) {
			t.Errorf("byte metrics not shown as sizes:\n%s", res.stdout)
		}
	})
	t.Run("a whole-run figure under a group", func(t *testing.T) {
		res := runCmd(t, "run", "--quiet", writePlan(t, procPlan("embedded", "", "groups.sub.self.cpu.max < 100")))
		if res.code != 2 || !strings.Contains(res.stderr, "self.cpu.max is a whole-run figure, not measured per group") {
			t.Fatalf("exit %d, want 2 with the whole-run error\n%s%s", res.code, res.stdout, res.stderr)
		}
	})
}

// exitedPID is the pid of a process that has run and exited.
func exitedPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}
