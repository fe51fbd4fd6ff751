package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
)

// latePlan is ten publishers, each with its own subscriber, 20 messages a
// second each (200/s in all) over a 3 s steady phase, at QoS %d, with
// drain %s.
const latePlan = `name: late
broker: {connect_timeout: 2s}
groups:
  - name: sub
    count: 10
    client_id: "lsub-%%i"
    subscribe: {topic: "late/%%i", qos: %d}
  - name: pub
    count: 10
    client_id: "lpub-%%i"
    publish: {topic: "late/%%i", qos: %d, size: 64B, every: 50ms}
duration: 3s
drain: %s
`

// lateRun runs latePlan at qos with drain against url and reads its JSON
// report.
func lateRun(t *testing.T, url string, qos int, drain string) (int, *faultReport, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "late.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(latePlan, qos, qos, drain)), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.json")
	r := runCmd(t, "run", "--quiet", "--broker", url, "--json", report, path)
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no JSON report (exit %d): %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	var rep faultReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// The phases' lengths go with the output: on a machine too loaded to
	// keep the run's timeline (a drain that lasted far longer than the
	// plan's), the figures say so.
	var spans struct {
		Phases []struct{ Name, Duration string } `json:"phases"`
	}
	_ = json.Unmarshal(b, &spans)
	out := r.stdout + r.stderr + "phases:"
	for _, p := range spans.Phases {
		out += " " + p.Name + " " + p.Duration
	}
	return r.code, &rep, out
}

// lateWarningRE reads the late warning's rate, count and suggested drain.
var lateWarningRE = regexp.MustCompile(`^deliveries were still arriving when drain ended \((\d+)/s in its last second\): (\d+) late deliver(?:y|ies) counted lost \(lost_late\); drain: (\S+) \(or drain: \{max: (\S+), quiet: 1s\}\) would likely have received them$`)

// lateWarning returns the submatches of the report's late warning, nil
// when it has none.
func (r *faultReport) lateWarning() []string {
	for _, w := range r.Warnings {
		if m := lateWarningRE.FindStringSubmatch(w); m != nil {
			return m
		}
	}
	return nil
}

// TestLateIsNotLostByBroker: against a broker that delays every delivery
// by 3 s, a 2 s drain ends while deliveries are still arriving. What it
// missed is lost_late, not lost_broker, the verdict still fails and says
// so, and the warning's drain would have received them; drain's mapping
// form receives every delivery. A broker that drops deliveries still
// reports them as lost_broker, whatever the drain.
func TestLateIsNotLostByBroker(t *testing.T) {
	const mapping = "{max: 10s, quiet: 1s}"
	tests := []struct {
		name   string
		faults broker.Faults
		qos    int
		drain  string
		want   int
		check  func(t *testing.T, url string, r *faultReport, fc broker.FaultCounts)
	}{
		{name: "delayed 3s, QoS 0, drain 2s: late", faults: broker.Faults{Delay: 3 * time.Second}, qos: 0, drain: "2s", want: exitFail, check: checkLate(0, true)},
		{name: "delayed 3s, QoS 1, drain 2s: late", faults: broker.Faults{Delay: 3 * time.Second}, qos: 1, drain: "2s", want: exitFail, check: checkLate(1, false)},
		{name: "delayed 3s, QoS 0, drain {max, quiet}: every delivery", faults: broker.Faults{Delay: 3 * time.Second}, qos: 0, drain: mapping, want: exitPass, check: checkNoneLost},
		{name: "delayed 3s, QoS 1, drain {max, quiet}: every delivery", faults: broker.Faults{Delay: 3 * time.Second}, qos: 1, drain: mapping, want: exitPass, check: checkNoneLost},
		{name: "dropping 1 in 50, QoS 0, drain {max, quiet}: lost by broker, drain ends quiet", faults: broker.Faults{DropEvery: 50}, qos: 0, drain: mapping, want: exitFail, check: checkDroppedQuiet},
		{name: "dropping 1 in 50, QoS 0, drain 2s: lost by broker", faults: broker.Faults{DropEvery: 50}, qos: 0, drain: "2s", want: exitFail, check: checkDropped},
	}
	// One run at a time, and not beside the package's parallel tests: the
	// claim is about timing (a second of deliveries on their way), which a
	// machine running several of these at once under -race did not keep
	// (a 2 s drain received all of a 3 s delay's deliveries, once), and
	// beside the parallel tests under -race the generator was starved to
	// 125 of 200 msg/s, 226 messages never sent.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := embedded(t, broker.Options{Faults: tt.faults})
			code, r, out := lateRun(t, b.URL(), tt.qos, tt.drain)
			if code != tt.want {
				t.Errorf("exit %d, want %d (%s)\n%s", code, tt.want, r.Summary, out)
			}
			if e := r.n("expected"); e != 600 {
				t.Errorf("expected %d, want 600 (200/s over 3 s)", e)
			}
			if l, sum := r.n("lost"), r.n("lost_unsent")+r.n("lost_unacked")+r.n("lost_broker")+r.n("lost_late"); l != sum {
				t.Errorf("lost %d, but unsent %d + unacked %d + by broker %d + late %d = %d", l, r.n("lost_unsent"), r.n("lost_unacked"), r.n("lost_broker"), r.n("lost_late"), sum)
			}
			tt.check(t, b.URL(), r, b.FaultCounts())
			t.Logf("%s: lost %d (broker %d, late %d); warnings %q; %s", r.Summary, r.n("lost"), r.n("lost_broker"), r.n("lost_late"), r.Warnings, out[strings.LastIndex(out, "phases:"):])
		})
	}
}

// checkLate checks a run whose drain ended while deliveries arrived: its
// loss is all late, the failed check says so, the warning gives the rate
// and a drain that, run again (when again), receives every delivery.
func checkLate(qos int, again bool) func(t *testing.T, url string, r *faultReport, fc broker.FaultCounts) {
	return func(t *testing.T, url string, r *faultReport, _ broker.FaultCounts) {
		t.Helper()
		// 3 s of delay against a 2 s drain leaves about a second of
		// messages, 200, on their way.
		if l := r.n("lost"); l < 100 || l > 300 {
			t.Errorf("lost %d, want about 200", l)
		}
		if r.n("lost_late") != r.n("lost") || r.n("lost_broker") != 0 {
			t.Errorf("lost %d: late %d, by broker %d; want all late", r.n("lost"), r.n("lost_late"), r.n("lost_broker"))
		}
		if !strings.Contains(r.Summary, "lost_late=") || !strings.Contains(r.Summary, "late rather than dropped by the broker") {
			t.Errorf("summary %q does not say the loss was late", r.Summary)
		}
		m := r.lateWarning()
		if m == nil {
			t.Fatalf("no late warning in %q", r.Warnings)
		}
		var rate, late int64
		fmt.Sscan(m[1], &rate)
		fmt.Sscan(m[2], &late)
		// The rate is the machine's as much as the plan's: 200/s when it
		// keeps up (198, 206 measured), 70/s once on a starved one, never
		// above what was published.
		if rate <= 0 || rate > 250 || late != r.n("lost_late") {
			t.Errorf("warning says %d/s and %d late; want up to 200/s and lost_late %d", rate, late, r.n("lost_late"))
		}
		d, err := time.ParseDuration(m[3])
		if err != nil || d < 3*time.Second || d > 30*time.Second {
			t.Fatalf("suggested drain %q: want a duration from 3s (the delay) to 30s", m[3])
		}
		if !again {
			return
		}
		// The suggestion holds: the same plan with it passes.
		code, rerun, out := lateRun(t, url, qos, m[3])
		if code != exitPass || rerun.n("lost") != 0 {
			t.Errorf("with the suggested drain %s: exit %d, lost %d (%s)\n%s", m[3], code, rerun.n("lost"), rerun.Summary, out)
		}
	}
}

// checkNoneLost checks a run that received every delivery, with no late
// warning.
func checkNoneLost(t *testing.T, _ string, r *faultReport, _ broker.FaultCounts) {
	t.Helper()
	if r.n("lost") != 0 || r.n("received") != 600 {
		t.Errorf("lost %d received %d, want every delivery", r.n("lost"), r.n("received"))
	}
	if r.lateWarning() != nil {
		t.Errorf("a late warning with nothing lost: %q", r.Warnings)
	}
}

// checkDroppedQuiet is checkDropped for drain {max: 10s, quiet: 1s}:
// the deliveries stop with steady, and drain ends a second later, not at
// max (the whole run would then last 13 s and more).
func checkDroppedQuiet(t *testing.T, url string, r *faultReport, fc broker.FaultCounts) {
	t.Helper()
	checkDropped(t, url, r, fc)
	var s string
	if err := json.Unmarshal(r.Elapsed, &s); err != nil {
		t.Fatalf("elapsed %s: %v", r.Elapsed, err)
	}
	if d, err := time.ParseDuration(s); err != nil || d >= 10*time.Second {
		t.Errorf("the run lasted %s: drain did not end once quiet", s)
	}
}

// checkDropped checks a run against a dropping broker: its loss is exactly
// the broker's drops, all lost_broker, none late.
func checkDropped(t *testing.T, _ string, r *faultReport, fc broker.FaultCounts) {
	t.Helper()
	if fc.Dropped == 0 || r.n("lost") != fc.Dropped {
		t.Errorf("lost %d, the broker dropped %d", r.n("lost"), fc.Dropped)
	}
	if r.n("lost_broker") != r.n("lost") || r.n("lost_late") != 0 {
		t.Errorf("lost %d: by broker %d, late %d; want all by broker", r.n("lost"), r.n("lost_broker"), r.n("lost_late"))
	}
	if r.lateWarning() != nil || strings.Contains(r.Summary, "late") {
		t.Errorf("dropped deliveries called late: %q %q", r.Summary, r.Warnings)
	}
}
