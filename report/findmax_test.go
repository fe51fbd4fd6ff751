package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/browsertest"
	"github.com/mqplan/mqplan/internal/golden"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/threshold"
)

func fptr(v float64) *float64             { return &v }
func dptr(d time.Duration) *time.Duration { return &d }

// findMaxCases are searches as the command would fill them: one
// confirmed, one with nothing passing, one interrupted before any trial
// ended.
func findMaxCases() map[string]*FindMax {
	trial := func(n int, v, rate float64, p99 time.Duration, loss float64, confirm bool, failed ...string) FindMaxTrial {
		verdict := VerdictPass
		if len(failed) > 0 {
			verdict = VerdictFail
		}
		return FindMaxTrial{N: n, Value: v, Confirm: confirm, Verdict: verdict, SendRate: fptr(rate), P50: dptr(p99 / 4),
			P99: dptr(p99), LossRate: fptr(loss), Failed: failed, Elapsed: 12 * time.Second}
	}
	base := func() *FindMax {
		return &FindMax{Plan: "1to1-qos1", File: "plans/1to1-qos1.yaml", BrokerURL: "mqtt://user:secret@127.0.0.1:1883", MqplanVersion: testMqplanVersion, Knob: "groups.pub.rate",
			Unit: "msg/s", From: 200, Max: 204800, Precision: 0.05, TrialDuration: 10 * time.Second, ConfirmDuration: time.Minute,
			Started: time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC), Elapsed: 3 * time.Minute}
	}
	ok := base()
	ok.Trials = []FindMaxTrial{
		trial(1, 200, 199.8, 3*time.Millisecond, 0, false),
		trial(2, 400, 399.1, 4*time.Millisecond, 0, false),
		trial(3, 800, 612, 900*time.Millisecond, 0.02, false, "p99 < 50ms and dup_rate == 0 (p99=900ms, dup_rate=0)", "loss_rate == 0 (loss_rate=0.02)"),
		trial(4, 600, 598.5, 9*time.Millisecond, 0, false),
		trial(5, 700, 655, 300*time.Millisecond, 0, false, "p99 < 50ms and dup_rate == 0 (p99=300ms, dup_rate=0)"),
		trial(6, 650, 649.2, 20*time.Millisecond, 0, false),
		trial(7, 675, 660, 80*time.Millisecond, 0, false, "p99 < 50ms and dup_rate == 0 (p99=80ms, dup_rate=0)"),
		trial(8, 650, 648.7, 25*time.Millisecond, 0, true),
	}
	ok.LastPass, ok.FirstFail, ok.Answer, ok.Status = fptr(650), fptr(675), fptr(650), FindMaxConfirmed
	none := base()
	none.Knob, none.Unit, none.From, none.Max = "groups.pub.count", "clients", 2, 2048
	none.Trials = []FindMaxTrial{trial(1, 2, 0.2, 0, 1, false, "loss_rate == 0 (loss_rate=1)"), trial(2, 1, 0.1, 0, 1, false, "loss_rate == 0 (loss_rate=1)")}
	none.Trials[0].P50, none.Trials[0].P99, none.Trials[1].P50, none.Trials[1].P99 = nil, nil, nil, nil
	none.FirstFail, none.Status, none.Reason = fptr(1), FindMaxNoPass, "even the lowest value tried, 1, failed"
	stopped := base()
	stopped.Status, stopped.Reason = FindMaxIncomplete, "interrupted"
	// A broker killed during trial 3: its run is unhealthy, the search
	// stops with the healthy trials' bracket; the plan's fixed bound is
	// warned of.
	sick := base()
	sick.Trials = []FindMaxTrial{
		trial(1, 200, 199.8, 3*time.Millisecond, 0, false),
		trial(2, 400, 399.1, 4*time.Millisecond, 0, false),
		trial(3, 800, 310, 2*time.Second, 0.61, false, "loss_rate == 0 (loss_rate=0.61)", "clients.lost == 0 (clients.lost=200)"),
	}
	sick.Trials[2].Verdict, sick.Trials[2].Note = VerdictUnhealthy, "not a capacity signal: the run was not healthy"
	sick.Trials[2].Unhealthy = []string{"the broker process exited (found gone at 4s: /proc/4242: no such process: it exited)", "200 unexpected disconnections (disconnects)"}
	sick.LastPass, sick.Status = fptr(400), FindMaxIncomplete
	sick.Reason = "trial 3 at 800 was not a healthy run (the broker process exited (found gone at 4s: /proc/4242: no such process: it exited); 200 unexpected disconnections (disconnects)): a failing broker is not a capacity limit, so the search stopped there"
	sick.Warnings = []string{FixedBoundWarning(plans.FixedBound{Index: 3, Expr: "groups.sub.recv_rate >= 190", Pos: plans.Pos{File: "plans/1to1-qos1.yaml", Line: 40, Col: 5},
		Bound:    threshold.Bound{Ref: threshold.Ref{Scope: threshold.Groups, Name: "sub", Metric: metric.RecvRate}, Value: 190, Op: ">=", Text: "groups.sub.recv_rate >= 190"},
		Relative: "groups.sub.recv_rate >= groups.pub.send_rate * 0.95"}, "groups.pub.rate"),
		FixedBoundWarning(plans.FixedBound{Index: 4, Expr: "p99 < 50ms and sent > 1000", Pos: plans.Pos{File: "plans/1to1-qos1.yaml", Line: 41, Col: 5},
			Bound: threshold.Bound{Ref: threshold.Ref{Metric: metric.Sent}, Value: 1000, Op: ">", Text: "sent > 1000"}}, "groups.pub.rate")}
	// A confirmation failing where its short trial passed, then one
	// lower holding: confirmed, and marked unstable.
	shaky := base()
	shaky.Trials = append(append([]FindMaxTrial(nil), ok.Trials[:7]...),
		trial(8, 650, 648.7, 70*time.Millisecond, 0, true, "p99 < 50ms and dup_rate == 0 (p99=70ms, dup_rate=0)"),
		trial(9, 585, 584.9, 12*time.Millisecond, 0, true))
	shaky.Trials[7].Note = "unstable: trial 6 passed at 650"
	shaky.LastPass, shaky.FirstFail, shaky.Answer, shaky.Status = fptr(650), fptr(675), fptr(585), FindMaxConfirmed
	shaky.Unstable, shaky.ConfirmFailed = true, fptr(650)
	// The budget ran out after that failed confirmation.
	broke := base()
	broke.Trials = shaky.Trials[:8]
	broke.LastPass, broke.FirstFail, broke.Status = fptr(650), fptr(675), FindMaxIncomplete
	broke.Reason = "--budget 3m0s would be exceeded (spent 2m36s, the next trial needs about 1m12s)"
	broke.Unstable, broke.ConfirmFailed = true, fptr(650)
	return map[string]*FindMax{"findmax-confirmed": ok, "findmax-nopass": none, "findmax-interrupted": stopped,
		"findmax-unhealthy": sick, "findmax-unstable": shaky, "findmax-budget-after-confirm-failed": broke}
}

// TestFindMaxOutputs pins the table and the JSON of each case, and checks
// that the JSON carries what the table says.
func TestFindMaxOutputs(t *testing.T) {
	for name, f := range findMaxCases() {
		t.Run(name, func(t *testing.T) {
			var table, js bytes.Buffer
			if err := WriteFindMaxTable(&table, f); err != nil {
				t.Fatal(err)
			}
			if err := WriteFindMaxJSON(&js, f); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(goldenDir, name+".txt"), table.Bytes())
			golden.Check(t, filepath.Join(goldenDir, name+".json"), js.Bytes())
			if strings.Contains(table.String()+js.String(), "secret") {
				t.Error("the broker's password shows")
			}
			var back findMaxJSON
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if back.Status != f.Status || len(back.Trials) != len(f.Trials) || back.Summary != f.Summary() {
				t.Errorf("JSON says %q with %d trials (%q), want %q with %d", back.Status, len(back.Trials), back.Summary, f.Status, len(f.Trials))
			}
		})
	}
}

// TestFindMaxHTMLInBrowser opens each page in headless Chromium: no
// error, nothing fetched, the chart drawn with a point per trial and
// figure (send rate and p99), or its note when no trial ran.
func TestFindMaxHTMLInBrowser(t *testing.T) {
	want := map[string]string{"findmax-confirmed": "16", "findmax-nopass": "2", "findmax-interrupted": "", "findmax-unhealthy": "6",
		"findmax-unstable": "18", "findmax-budget-after-confirm-failed": "16"}
	for name, f := range findMaxCases() {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteFindMaxHTML(&b, f); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "secret") {
				t.Error("the broker's password shows")
			}
			path := filepath.Join(t.TempDir(), "findmax.html")
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			p := browsertest.Open(t, path, 1200, browsertest.ChartsReady,
				`({errors: document.body.dataset.errors, drawn: document.getElementById("findmax-chart").dataset.drawn || "", points: document.getElementById("findmax-chart").dataset.points || ""})`)
			browsertest.SaveScreenshot(t, p, "findmax-"+name)
			for _, e := range p.Errors {
				t.Errorf("browser error: %s", e)
			}
			for _, u := range p.Requests {
				t.Errorf("the page fetched %s: it must work offline", u)
			}
			var st struct{ Errors, Drawn, Points string }
			if err := json.Unmarshal(p.Value, &st); err != nil {
				t.Fatal(err)
			}
			if st.Errors != "0" {
				t.Errorf("%s script errors", st.Errors)
			}
			if len(f.Trials) == 0 {
				if st.Drawn != "empty" {
					t.Errorf("chart drawn %q, want its no-trial note", st.Drawn)
				}
				return
			}
			if st.Drawn != "true" || st.Points != want[name] {
				t.Errorf("chart drawn %q with %s points, want true with %s", st.Drawn, st.Points, want[name])
			}
		})
	}
}
