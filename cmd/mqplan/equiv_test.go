package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/threshold"
)

// refusedSharded are the shipped plans a sharded run refuses, with what
// its exit 2 line must say: the test asserts the refusal instead of the
// equality.
var refusedSharded = map[string]string{
	"churn.yaml": "groups.dashboards.clean_start: a subscribing group that churns with a clean session: not supported yet in a sharded run",
}

// equivUnderRace are the plans TestWorkersEqualOneProcess and
// TestWorkersEqualBrokerFaults run in a build with the race detector (on
// the embedded broker): a refused one, request/response across shards,
// many publishers to one subscriber, stages over a $share group. The
// race detector slows every process several times over; .ci/run runs
// every shipped plan on both brokers in a build without it.
var equivUnderRace = map[string]bool{"churn.yaml": true, "command-response.yaml": true, "fanin-qos1.yaml": true, "stages.yaml": true}

// equivCounts are the counts a sharded run must give exactly as one
// process does, in every scope the JSON has (the top, each group, each
// phase, each stage): sends, expectations, deliveries, loss and its
// causes, duplicates, order, requests and answers.
var equivCounts = []metric.Name{
	metric.Sent, metric.Unsent, metric.Acked, metric.Expected, metric.Received, metric.Lost, metric.LostUnsent,
	metric.LostUnacked, metric.LostBroker, metric.Duplicates, metric.Unexpected, metric.OverlapCopies,
	metric.OutOfOrder, metric.Corrupted, metric.SentBytes, metric.ReceivedBytes,
	"requests", "responses", "responses_expected", "responses_late", "responses_duplicates", "responses_sent", "rtt.timeouts",
}

// equivWholeRun are counted over the whole run (connections and their
// events), and compared in the top and group scopes only: a phase holds
// them by when they happened, which no two runs share at a phase's edge.
var equivWholeRun = []metric.Name{
	metric.ConnectOK, metric.ConnectFailed, metric.ClientsLost, metric.ChurnDisconnects, metric.ChurnReconnects,
	metric.Reconnects, metric.QoSDowngrades, metric.Errors,
}

// accounting lists a JSON result's counts (equivCounts in every scope,
// equivWholeRun at the top and per group), its verdict and the embedded
// broker's counters, one per line, for two runs to be compared.
func accounting(t *testing.T, path string) []string {
	t.Helper()
	r := savedResult(t, path)
	var out []string
	for _, th := range r.Thresholds {
		if countsOnly(th.Values) {
			out = append(out, fmt.Sprintf("threshold %q pass=%v", th.Expr, th.Pass))
		}
	}
	if !r.Complete() {
		out = append(out, "incomplete: "+r.Verdict())
	}
	add := func(scope string, set metric.Set, names []metric.Name) {
		for _, n := range names {
			if v, ok := set[n]; ok {
				out = append(out, fmt.Sprintf("%s%s = %v", scope, n, v))
			}
		}
	}
	add("", r.Measured.Top, equivCounts)
	add("", r.Measured.Top, equivWholeRun)
	for g, set := range r.Measured.Groups {
		add("groups."+g+".", set, equivCounts)
		add("groups."+g+".", set, equivWholeRun)
	}
	for p, set := range r.Measured.Phases {
		add("phases."+p+".", set, equivCounts)
	}
	for s, set := range r.Measured.Stages {
		add("stages."+s+".", set, equivCounts)
	}
	if b := r.Broker; b != nil {
		out = append(out, fmt.Sprintf("embedded broker: received %d, sent %d, dropped %d, inflight dropped %d, clients %d",
			b.MessagesReceived, b.MessagesSent, b.MessagesDropped, b.InflightDropped, b.ClientsMaximum))
	}
	slices.Sort(out)
	return out
}

// countsOnly says whether a threshold reads counts only (or ratios of
// counts: loss, duplicate and out-of-order rates), whose outcome two runs
// of the same schedule must share; latencies and per-second rates differ
// from run to run, and a loaded machine can fail them in either.
func countsOnly(vals []threshold.Value) bool {
	for _, v := range vals {
		switch v.Ref.Metric {
		case metric.LossRate, metric.DupRate, metric.OOORate:
			continue
		}
		if _, ok := v.Value.(int); !ok {
			return false
		}
	}
	return true
}

// equivArgs is how TestWorkersEqualOneProcess runs shipped plan f: as
// TestShippedPlans does, shorter still (a 1 s steady phase, a drain that
// ends once everything is in).
func equivArgs(f, brokerName string) (string, []string) {
	name, args := shippedScaling(f, brokerName)
	if f != "stages.yaml" && f != "fleet-growth.yaml" { // stages replace duration
		args = append(args, "--set", "duration=1s")
	}
	return name, append(args, "--set", "drain=3s")
}

// runTwice runs args as one process and as --workers 2 at once, each on
// its own broker (brokers[0] and [1]: --broker arguments, none for the
// plan's embedded broker, which each run then starts for itself), and
// returns their exit codes, outputs and JSON files.
func runTwice(t *testing.T, args []string, brokers [2][]string, plan string) (codes [2]int, outs [2]string, jsons [2]string) {
	t.Helper()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i, mode := range [][]string{{"run"}, {"run", "--workers", "2"}} {
		jsons[i] = filepath.Join(dir, fmt.Sprintf("run-%d.json", i))
		a := append(append(append(append(mode, args[1:]...), brokers[i]...), "--json", jsons[i]), plan)
		p := start(t, a...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], outs[i] = p.exit(t)
		}()
	}
	wg.Wait()
	return codes, outs, jsons
}

// TestWorkersEqualOneProcess: every shipped plan, run as one process and
// as mqplan run --workers 2, on the embedded broker (the parent hosting
// it) and on Mosquitto v5, gives the same verdict and exit code and the
// same counts in every scope (equivCounts, equivWholeRun), and the same
// embedded broker counters; a plan a sharded run refuses is refused with
// exit 2 and its positioned line. A plan whose publishers run at rate:
// max sends what the broker's speed allows, which no two runs share: its
// accounting must close instead (everything sent expected, received and
// acknowledged, none lost or duplicated). The two runs of a plan go side
// by side, each on its own broker.
func TestWorkersEqualOneProcess(t *testing.T) {
	t.Parallel() // beside TestWorkersEqualBrokerFaults
	files, err := fs.Glob(plans.Shipped, "*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("shipped plans: %v %v", files, err)
	}
	type row struct {
		name    string
		brokers [2][]string
	}
	rows := []row{{name: "embedded"}}
	if !raceEnabled && (mosquittotest.Binary() != "" || os.Getenv("CI") != "") {
		rows = append(rows, row{"mosquitto-v5", [2][]string{{"--broker", mosquittotest.Start(t)}, {"--broker", mosquittotest.Start(t)}}})
	} else if !raceEnabled {
		t.Log("mosquitto is not installed: the embedded broker only")
	}
	for _, b := range rows {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel() // the rows side by side: counts must not depend on the load
			for _, f := range files {
				name, args := equivArgs(f, b.name)
				t.Run(name, func(t *testing.T) {
					if raceEnabled && !equivUnderRace[f] {
						t.Skip("run without the race detector (.ci/run does)")
					}
					if why, ok := refusedSharded[f]; ok {
						p := start(t, append(append(append([]string{"run", "--workers", "2"}, args[1:]...), b.brokers[1]...), "plans/"+f)...)
						code, out := p.exit(t)
						if code != 2 || !strings.Contains(out, "plans/"+f+":") || !strings.Contains(out, why) {
							t.Fatalf("--workers 2: exit %d, want 2 saying %q\n%s", code, why, out)
						}
						t.Logf("refused under sharding, as it should be: %s", why)
						return
					}
					codes, outs, jsons := runTwice(t, args, b.brokers, "plans/"+f)
					if codes[0] > 1 || codes[1] > 1 {
						t.Fatalf("exit %d as one process, %d with --workers 2 (want a complete run of each)\none process:\n%s\n--workers 2:\n%s", codes[0], codes[1], outs[0], outs[1])
					}
					if codes[0] != codes[1] {
						// Allowed only when the thresholds that differ
						// read latencies or rates: the accounting below
						// holds every count threshold's outcome.
						t.Logf("exit %d as one process, %d with --workers 2: a latency or rate threshold of this loaded machine\none process:\n%s\n--workers 2:\n%s", codes[0], codes[1], outs[0], outs[1])
					}
					one, two := accounting(t, jsons[0]), accounting(t, jsons[1])
					if f == "max-qos1.yaml" {
						closes(t, jsons[0])
						closes(t, jsons[1])
						return
					}
					if d := lineDiff(one, two); d != "" {
						t.Errorf("--workers 2 counted otherwise than one process (- one process, + --workers 2):\n%s", d)
					}
				})
			}
		})
	}
}

// closes checks a rate: max run's accounting over its phases: every
// message sent is expected once, received and acknowledged, none lost,
// duplicated or out of order.
func closes(t *testing.T, path string) {
	t.Helper()
	r := savedResult(t, path)
	for _, p := range []phase.Phase{phase.Warmup, phase.Steady} {
		m := r.Measured.Phases[p.String()]
		sent, _ := m[metric.Sent].(int)
		got := fmt.Sprint(m[metric.Expected], m[metric.Received], m[metric.Acked], m[metric.Lost], m[metric.Duplicates], m[metric.OutOfOrder])
		if want := fmt.Sprint(sent, sent, sent, 0, 0, 0); sent == 0 || got != want {
			t.Errorf("%s: %s: sent %d; expected, received, acked, lost, duplicates, out of order: %s, want %s", path, p, sent, got, want)
		}
	}
}

// lineDiff lists the lines only a or only b holds ("" when none).
func lineDiff(a, b []string) string {
	var d []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			d = append(d, "- "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			d = append(d, "+ "+l)
		}
	}
	return strings.Join(d, "\n")
}

// TestWorkersEqualBrokerFaults: under a broker that drops every 100th
// delivery and duplicates every 50th (mqplan broker --drop-every 100
// --duplicate-every 50), mqplan run --workers 2 counts, on plans of each
// shape across shards (many publishers to one subscriber, one to many at
// QoS 0, a $share group, stages), exactly what the broker's own counters
// say it took, delivered, dropped and duplicated.
//
// It counts against the broker's own record, which no load moves, so it
// runs beside TestWorkersEqualOneProcess's rows (whose counts must not
// depend on the load either) rather than after them.
func TestWorkersEqualBrokerFaults(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"fanin-qos1.yaml", "fanout-qos0.yaml", "shared-sub.yaml", "stages.yaml"} {
		t.Run(strings.TrimSuffix(f, ".yaml"), func(t *testing.T) {
			if raceEnabled && !equivUnderRace[f] {
				t.Skip("run without the race detector (.ci/run does)")
			}
			b, err := broker.Start(broker.Options{Faults: broker.Faults{DropEvery: 100, DuplicateEvery: 50}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(5 * time.Second)
			_, args := equivArgs(f, "embedded")
			path := filepath.Join(t.TempDir(), "w.json")
			p := start(t, append(append([]string{"run", "--workers", "2", "--json", path, "--broker", b.URL()}, args[1:]...), "plans/"+f)...)
			code, out := p.exit(t)
			if !judged(code) {
				t.Fatalf("exit %d\n%s", code, out)
			}
			got := phaseTotals(t, path)
			fc := b.FaultCounts()
			if fc.Dropped == 0 || fc.Duplicated == 0 {
				t.Fatalf("the broker dropped %d and duplicated %d: the test tests nothing", fc.Dropped, fc.Duplicated)
			}
			want := fmt.Sprintf("sent=%d expected=%d received=%d lost=%d duplicates=%d", fc.Published, fc.Deliveries,
				fc.Deliveries-fc.Dropped+fc.Duplicated, fc.Dropped, fc.Duplicated)
			if got != want {
				t.Errorf("--workers 2 counted %s\nthe broker says %s", got, want)
			}
		})
	}
}

// phaseTotals sums a JSON result's accounting over the phases in which
// messages are sent (warmup, ramp, steady): everything the broker saw.
func phaseTotals(t *testing.T, path string) string {
	t.Helper()
	r := savedResult(t, path)
	var b strings.Builder
	for i, n := range []metric.Name{metric.Sent, metric.Expected, metric.Received, metric.Lost, metric.Duplicates} {
		var sum int64
		for _, p := range []phase.Phase{phase.Warmup, phase.Ramp, phase.Steady} {
			if v, ok := r.Measured.Phases[p.String()][n].(int); ok {
				sum += int64(v)
			}
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", n, sum)
	}
	return b.String()
}
