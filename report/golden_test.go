package report

import (
	"bytes"
	"flag"
	"github.com/mqplan/mqplan/stats"
	"os"
	"path/filepath"
	"testing"
)

// update rewrites the golden files instead of comparing with them:
//
//	go test ./report -update
var update = flag.Bool("update", false, "rewrite golden files")

// goldenDir holds the expected outputs, at the repository root so that
// reviewers find every golden file in one place.
const goldenDir = "../testdata/golden/report"

// golden compares got with the named golden file (or rewrites it with
// -update). On a mismatch it prints both in full: the outputs are small and
// a diff tool is one copy-paste away.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

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
	return []struct {
		name string
		r    *Result
	}{
		{"fail", Evaluate(failing, withBuiltins(t, failing), fullStats(t))},
		{"pass", Evaluate(passing, withBuiltins(t, passing), clean)},
		{"incomplete", Evaluate(empty, withBuiltins(t, empty), emptyStats(t))},
		// Faults: only the plan's own latency threshold, so the built-in
		// checks are what fail the run.
		{"faults", Evaluate(passing, withBuiltins(t, passing), faultStats(t))},
	}
}

func TestGoldenTable(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, tc.r); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".txt", b.Bytes())
		})
	}
}

func TestGoldenJSON(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJSON(&b, tc.r); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".json", b.Bytes())
		})
	}
}
