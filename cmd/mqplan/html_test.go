package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/browsertest"
	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// TestHTMLReportInBrowser runs a real plan with --out html=FILE, opens the
// report in headless Chromium and checks what a reader would see: no
// console error or uncaught exception, no request beyond the file (it
// works offline), every chart drawn with each of its series painting
// pixels, and no password. On the embedded broker the processes' charts
// have mqplan's own line only; against a real Mosquitto named by
// broker.metrics, the broker's too, and with sys the broker's own
// counters from $SYS. The screenshots are left in
// $TMPDIR/mqplan-screenshots/run.png and run-mosquitto.png.
func TestHTMLReportInBrowser(t *testing.T) {
	t.Parallel()
	if browsertest.Binary() == "" && os.Getenv("CI") == "" {
		t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	tests := []struct {
		name, screenshot string
		// args set the broker; procs are the processes charted; own are
		// the charts of the broker's own counters ($SYS) and their series
		// (its memory joins the processes' in chart-rss).
		args  func(t *testing.T) []string
		procs []string
		own   map[string][]string
	}{
		{"embedded broker", "run", func(*testing.T) []string { return nil }, []string{"mqplan"}, nil},
		{"mosquitto by its pid and $SYS", "run-mosquitto", func(t *testing.T) []string {
			m := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
			return []string{"--set", "broker.url=" + m.MQTT, "--set", "broker.metrics.pid=" + strconv.Itoa(m.PID()),
				"--set", "broker.metrics.sys=true"}
		}, []string{"broker", "mqplan"}, map[string][]string{
			"chart-rss":            {"broker", "mqplan", "broker (its own report)"},
			"chart-broker-publish": {"publish in", "publish out", "dropped"},
			"chart-broker-clients": {"clients", "subscriptions"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "report.html")
			args := append([]string{"run", "--quiet", "--out", "html=" + page}, tt.args(t)...)
			r := runCmd(t, append(args, "testdata/cli/html.yaml")...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			html, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("report: %d bytes", len(html))
			if len(html) > 300<<10 {
				t.Errorf("the report of a 6 s run takes %d bytes: more than 300 KiB", len(html))
			}
			if strings.Contains(string(html), "html-test-password") {
				t.Error("the report shows the plan's password")
			}
			if !strings.Contains(string(html), "<code>mqplan run --quiet --out ") {
				t.Error("the report lacks the command line that made it")
			}

			p := browsertest.Open(t, page, 1400, browsertest.ChartsReady, browsertest.ChartsState)
			browsertest.SaveScreenshot(t, p, tt.screenshot)
			for _, w := range p.Warnings {
				t.Logf("browser warning: %s", w)
			}
			for _, e := range p.Errors {
				t.Errorf("browser error: %s", e)
			}
			for _, u := range p.Requests {
				t.Errorf("the page fetched %s: it must work offline", u)
			}
			// Every chart of a real run has data. One group sends and the
			// other receives, so only the connections chart adds the
			// groups' own lines to its totals; each percentile plot has
			// the curve of all groups and of the one group with such
			// latency.
			charts := map[string]int{
				"chart-rate": 2, "chart-latency": 3, "chart-connections": 2 + 2, "chart-errors": 2, "chart-lag": 1,
				"chart-cpu": len(tt.procs), "chart-rss": len(tt.procs), "chart-dist-e2e": 2, "chart-dist-ack": 2,
				"chart-hist-e2e": 1, "chart-hist-ack": 1,
			}
			for id, series := range tt.own {
				charts[id] = len(series)
			}
			browsertest.CheckCharts(t, p, charts)
			browsertest.CheckSeries(t, p, "chart-cpu", tt.procs...)
			if _, ok := tt.own["chart-rss"]; !ok {
				browsertest.CheckSeries(t, p, "chart-rss", tt.procs...)
			}
			for id, series := range tt.own {
				browsertest.CheckSeries(t, p, id, series...)
			}
		})
	}
}
