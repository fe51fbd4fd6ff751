package report

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/stats"
)

// goldenDir holds the expected outputs, at the repository root so that
// reviewers find every golden file in one place; go test ./report -update
// rewrites them (see internal/golden).
const goldenDir = "../testdata/golden/report"

// goldenCases are the runs whose outputs are pinned.
func goldenCases(t *testing.T) []struct {
	name string
	r    *Result
} {
	failing := testPlan(
		"p99 < 10ms and dup_rate < 0.001",
		"loss_rate == 0",
		"connect.failed == 0",
		`groups.sub.recv_rate >= 790 and groups["pub"].send_rate >= 790`,
	)
	passing := testPlan("p99 < 10ms", "groups.pub.late_rate < 0.05")
	empty := testPlan("p99 < 10ms", "connect.failed == 0")
	// The passing run is a clean one: few late sends, no broker drops, no
	// errors, so the table shows no warnings.
	clean := fullStats(t)
	setLate(clean, 40)
	clean.Broker.MessagesDropped, clean.Broker.InflightDropped = 0, 0
	clean.ErrorSamples = nil
	// Nor a refused connection, a lost, duplicated or corrupted delivery,
	// which the built-in checks would fail.
	for i := range clean.Phases {
		ph := &clean.Phases[i]
		ph.Total = stats.Metrics{}
		for g := range ph.Groups {
			m := &ph.Groups[g]
			m.ConnectAttempts -= m.ConnectFailed
			m.ConnectFailed, m.Corrupted, m.Errors = 0, 0, 0
			// Every expected delivery arrived, once.
			m.Received, m.ReceivedOwn, m.Lost, m.LostOwn, m.Duplicates = m.Expected, m.ExpectedOwn, 0, 0, 0
			ph.Total.Merge(m)
		}
	}
	clean.Groups[1].Connected, clean.Groups[1].ConnectedAtEnd = 4, 4
	// Against a baseline: the failing run judged against the passing
	// one, saved (last-release.json): the same p99 and rates hold, its
	// losses fail a "no worse than the baseline" threshold.
	pass := Evaluate(passing, withBuiltins(t, passing), clean)
	pass.SetMqplanVersion(testMqplanVersion)
	gated := testPlan(
		"p99 <= baseline.p99 * 1.10",
		"groups.sub.recv_rate >= baseline.groups.sub.recv_rate * 0.95",
		"loss_rate <= baseline.loss_rate",
	)
	against := EvaluateWithBaseline(gated, withBuiltins(t, gated), fullStats(t), &Baseline{File: "last-release.json", Result: pass})
	cases := []struct {
		name string
		r    *Result
	}{
		{"fail", Evaluate(failing, withBuiltins(t, failing), fullStats(t))},
		{"pass", Evaluate(passing, withBuiltins(t, passing), clean)},
		{"incomplete", Evaluate(empty, withBuiltins(t, empty), emptyStats(t))},
		// Faults: only the plan's own latency threshold, so the built-in
		// checks are what fail the run.
		{"faults", Evaluate(passing, withBuiltins(t, passing), faultStats(t))},
		{"baseline", against},
		// A staged plan: a table, block and JSON set per stage.
		{"stages", stagedCase(t)},
	}
	// The mqplan that made them: a fixed value, not this test binary's
	// version, so that the files do not change with every commit.
	for _, tc := range cases {
		tc.r.SetMqplanVersion(testMqplanVersion)
	}
	return cases
}

// testMqplanVersion is the golden results' Result.MqplanVersion.
const testMqplanVersion = "v0.0.0-test (go1.26.0, rev 0123456789ab)"

// TestGoldenFormats pins every file format on the fixture runs: the
// summary table, the JSON, JUnit, Markdown and CSV, each in its golden
// file (testdata/golden/report/CASE.EXT; -update rewrites them). The HTML
// page is checked in a browser instead (html_test.go).
func TestGoldenFormats(t *testing.T) {
	formats := []struct {
		ext   string
		write func(io.Writer, *Result) error
	}{
		{".txt", WriteTable},
		{".json", WriteJSON},
		{".junit.xml", WriteJUnit},
		{".md", WriteMarkdown},
		{".csv", WriteCSV},
	}
	for _, f := range formats {
		for _, tc := range goldenCases(t) {
			t.Run(tc.name+f.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := f.write(&b, tc.r); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join(goldenDir, tc.name+f.ext), b.Bytes())
			})
		}
	}
}
