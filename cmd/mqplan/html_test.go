package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/internal/browsertest"
)

// TestHTMLReportInBrowser runs a real plan on the embedded broker with
// --out html=FILE, opens the report in headless Chromium and checks what
// a reader would see: no console error or uncaught exception, no request
// beyond the file (it works offline), every chart drawn with each of its
// series painting pixels, and no password. The screenshot is left in
// $TMPDIR/mqplan-screenshots/run.png.
func TestHTMLReportInBrowser(t *testing.T) {
	if browsertest.Binary() == "" && os.Getenv("CI") == "" {
		t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	t.Chdir("../..")
	page := filepath.Join(t.TempDir(), "report.html")
	r := runCmd(t, "run", "--quiet", "--out", "html="+page, "testdata/cli/html.yaml")
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

	p := browsertest.Open(t, page, 1400, browsertest.ChartsReady, browsertest.ChartsState)
	browsertest.SaveScreenshot(t, p, "run")
	for _, w := range p.Warnings {
		t.Logf("browser warning: %s", w)
	}
	for _, e := range p.Errors {
		t.Errorf("browser error: %s", e)
	}
	for _, u := range p.Requests {
		t.Errorf("the page fetched %s: it must work offline", u)
	}
	// Every chart of a real run has data. One group sends and the other
	// receives, so only the connections chart adds the groups' own lines
	// to its totals; each percentile plot has the curve of all groups and
	// of the one group with such latency.
	browsertest.CheckCharts(t, p, map[string]int{
		"chart-rate": 2, "chart-latency": 3, "chart-connections": 2 + 2, "chart-errors": 2, "chart-lag": 1,
		"chart-dist-e2e": 2, "chart-dist-ack": 2,
	})
}
