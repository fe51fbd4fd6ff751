// Package report owns mqplan's verdicts and their presentation: it turns a
// run's stats.Stats into the metric environment (Environment), judges the
// plan's thresholds against it (Evaluate), and writes the outcome as a human
// summary table (WriteTable), a JSON document (WriteJSON, WriteJSONFile),
// JUnit XML for CI test reports (WriteJUnit), a Markdown summary for
// pull requests (WriteMarkdown), the per-second timeline, per group, as
// CSV (WriteCSV) or a self-contained HTML page with charts (WriteHTML,
// whose charting library, uPlot, is vendored in assets/uplot); Format
// lists them for --out.
// It reads the JSON document back (ReadJSON), so that a saved run
// re-renders in every format, and compares two results (Compare,
// WriteComparison). Before a run, it explains a compiled plan
// (WriteExplain) and its split over the shards of a run across
// processes (WriteShards).
//
// Nothing here touches the network or reads a clock: every time shown comes
// from the Stats, so the same run always renders the same report and golden
// files can pin it byte for byte.
package report

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// Verdicts, as shown on the table's last line and in JSON's "verdict".
const (
	// VerdictPass: the run completed and every threshold held (exit 0).
	VerdictPass = "PASS"
	// VerdictFail: the run completed and a threshold failed (exit 1).
	VerdictFail = "FAIL"
	// VerdictIncomplete: the run could not complete (exit 3); what was
	// measured is still reported and judged, but no verdict on it stands.
	VerdictIncomplete = "INCOMPLETE"
	// VerdictInconclusive: the run completed and the only thresholds that
	// failed are latency thresholds that mqplan's own lack of CPU explains
	// (exit 4): they are not judged (see disturbance.go).
	VerdictInconclusive = "INCONCLUSIVE"
)

// lateWarnRate is the share of late sends above which the report warns that
// the generator fell behind: below it the percentiles are still honest (they
// are taken from intended times), above it the offered load was not the
// planned one and the user must know.
const lateWarnRate = 0.01

// Result is the verdict of one run and everything its outputs show. It is a
// plain value: Evaluate fills it, the writers only read it, so the CLI can
// write several formats from one Result.
type Result struct {
	// Plan is the plan as run. Its secrets (plans.Secret) are masked in
	// every output this package writes.
	Plan *plans.Plan
	// MqplanVersion is the mqplan that made the result: its version, Go
	// release and VCS revision as `mqplan version` prints them, less the
	// leading "mqplan" ("v0.4.0 (go1.26.0, rev 8be232e0a1b2)"). The
	// caller sets it (Evaluate does not know the binary); "" in a result
	// read back from a document written without it, and outputs then
	// leave it out.
	MqplanVersion string
	// Label names the run among others of one matrix (--label: the broker
	// or configuration a CI job tested, "emqx-5.8"); "" when not given.
	// Every output shows it beside the plan's name, and JUnit puts it in
	// the suite's and every test case's name, so that the reports of a
	// matrix merged into one keep their test cases apart.
	Label string
	// Hostname is the machine the run ran on, for JUnit's hostname
	// attribute (and the JSON's hostname, so that a re-rendered report is
	// the run's own); the caller sets it (this package reads no
	// environment), "" when not known.
	Hostname string
	// CommandLine is the command line that made the run ("mqplan run
	// --set duration=30s plan.yaml"), its secrets masked by the caller
	// that sets it; "" when not known (Evaluate does not know it).
	CommandLine string
	// BrokerURL is where the clients connected (the embedded broker's real
	// address included).
	BrokerURL string
	// Started is the run's wall-clock start; Elapsed its whole length.
	Started time.Time
	Elapsed time.Duration
	// Phases are the run's phases, in timeline order, as they happened.
	Phases []PhaseSpan
	// Groups describe each plan group's clients, in plan order.
	Groups []Group
	// Measured is the metric environment the thresholds were judged
	// against (see Environment).
	Measured threshold.Measured
	// RateWindow, when not 0, is what the top-level rates (send_rate,
	// recv_rate) are measured over instead of the steady phase: a plan
	// without publishers (mqplan sub) waits for others' messages, so its
	// rates cover the window from its first delivery to its last.
	RateWindow time.Duration
	// Latency summarises the run's latency histograms: end-to-end and ack
	// over the steady phase, connect and subscribe over the whole run.
	Latency []LatencyRow
	// Distributions are the steady phase's e2e and ack latency as
	// percentile curves, all groups together and per group (the HTML
	// report's percentile plot).
	Distributions []Distribution
	// Histograms are the steady phase's e2e and ack latency as counts per
	// bucket, all groups together (the HTML report's bar chart); absent
	// from a result read back from a document written before the key.
	Histograms []Histogram
	// Late counts steady-phase sends more than stats.LateThreshold behind
	// their schedule (late_rate is Late / sent).
	Late int64
	// Thresholds are the plan's thresholds with their outcomes, in plan order.
	Thresholds []ThresholdOutcome
	// Timeline is the per-second history.
	Timeline []stats.Second
	// Broker holds the embedded broker's own counters (nil when external).
	Broker *stats.Broker
	// CountersStart and CountersEnd are the broker's own counters
	// (broker.metrics sys or prometheus) before the first publish and
	// after the drain; not Sampled() when not sampled.
	CountersStart, CountersEnd brokerstat.Counters
	// Interrupted is set when a signal or a cancelled context stopped the run.
	Interrupted bool
	// Incomplete, when non-empty, says why the run could not complete.
	Incomplete string
	// BrokerGone, when non-empty, says the watched broker process exited
	// during the run (stats.Stats.BrokerGone); the warnings say it too.
	BrokerGone string
	// ErrorSamples are the errors seen, one line per kind with how many
	// more of that kind followed.
	ErrorSamples []string
	// Unsent counts, over the whole run, the messages the schedule called
	// for that were never sent.
	Unsent int64
	// InFlightAtEnd counts the QoS 1/2 publishes still awaiting their
	// acknowledgement when drain ended.
	InFlightAtEnd int64
	// DrainQuiet is how long drain listened past the last expected
	// delivery (0 when they did not all arrive).
	DrainQuiet time.Duration
	// Clock is a sharded run's time base (stats.Stats.Clock), nil for a
	// single process: the table's Clocks section and the JSON's clock.
	Clock *stats.Clock
	// Warnings are the conditions that make figures misleading if read
	// alone (a generator behind schedule, broker drops, values out of the
	// histograms' range). Every report shows them: they are never silent
	// (the CSV, the timeline's data alone, has no verdict and no warnings).
	Warnings []string
	// Baseline is the run this one was judged against (--baseline), or
	// nil. The JSON keeps the thresholds' baseline.* values and the
	// comparison (Comparison) but not the baseline itself (save it on its
	// own: it is a result file already), so a result read back has a
	// Comparison and no Baseline.
	Baseline *Baseline
	// Disturbance is how disturbed mqplan itself was over the steady
	// phase (its threads' wait for a CPU, its CPU use); nil when it was
	// not measured (not Linux, or a result without it).
	Disturbance *Disturbance
	// Comparison is this run compared with its baseline (Compare, the
	// baseline as A and this run as B, with DefaultTolerance), which every
	// format but the CSV shows; nil without a baseline.
	Comparison *Comparison
}

// PhaseSpan is when one phase of the run happened, as offsets from the
// start.
type PhaseSpan struct {
	Phase      phase.Phase
	Start, End time.Duration
}

// Duration is how long the phase lasted.
func (p PhaseSpan) Duration() time.Duration { return p.End - p.Start }

// Group is one plan group's clients and role.
type Group struct {
	Name string
	// Clients is the planned count; Connected the clients that completed
	// CONNECT at least once; ConnectedAtEnd those still connected when the
	// run ended; Lost those whose connection dropped and did not come back.
	Clients, Connected, ConnectedAtEnd, Lost int
	// Publishes and Subscribes say what the group does, which decides
	// whether its expected/received/lost are deliveries to it or of its
	// messages.
	Publishes, Subscribes bool
	// Late counts the group's steady-phase sends more than
	// stats.LateThreshold behind their schedule.
	Late int64
}

// LatencyRow summarises one latency histogram. The durations are zero, and
// meaningless, when Samples is 0: outputs show them as absent.
type LatencyRow struct {
	// Name is e2e, ack, connect or subscribe.
	Name                                string
	Samples                             int64
	Min, Mean, P50, P90, P99, P999, Max time.Duration
}

// ThresholdOutcome is one threshold as written and how it fared.
type ThresholdOutcome struct {
	// Expr is the expression exactly as the plan wrote it.
	Expr string
	// Pos is where it is written, so a failing line can be found.
	Pos plans.Pos
	// Builtin marks one of mqplan's own integrity checks, which no plan
	// line wrote (Pos is then zero).
	Builtin bool
	// Pass, Values and Reason are the evaluation's result: the values are
	// the metrics the expression read, Reason why it failed (empty on PASS).
	Pass   bool
	Values []threshold.Value
	Reason string
	// Late is, for a failed threshold on loss (lost, loss_rate,
	// lost_late), the lost_late of the scope it read: that much of the
	// loss was still arriving when drain ended, and Reason says so.
	Late int
	// NotJudged, on a failed threshold, says why its failure is not
	// judged: mqplan's own disturbance explains it (the evidence). Such a
	// failure makes the run INCONCLUSIVE, not FAIL.
	NotJudged string
}

// SetMqplanVersion records v as the mqplan that made the result
// (MqplanVersion), in its comparison with a baseline too, where this run
// is B.
func (r *Result) SetMqplanVersion(v string) {
	r.MqplanVersion = v
	if r.Comparison != nil {
		r.Comparison.B.MqplanVersion = v
	}
}

// Evaluate judges a run: it builds the metric environment from st, evaluates
// every compiled threshold against it, and gathers what the outputs show.
// A threshold that reads a metric with no samples fails (Threshold.Eval
// decides); thresholds are judged even on an incomplete run, so the user
// sees how far it got, but the verdict is then INCOMPLETE.
func Evaluate(p *plans.Plan, ths []*plans.Threshold, st *stats.Stats) *Result {
	return evaluate(p, ths, st, nil)
}

// evaluate is Evaluate and EvaluateWithBaseline.
func evaluate(p *plans.Plan, ths []*plans.Threshold, st *stats.Stats, base *Baseline) *Result {
	if st == nil {
		st = &stats.Stats{}
	}
	env := Environment(p, st)
	if base != nil && base.Result != nil {
		m := base.Result.Measured
		m.Baseline = nil // one level: a baseline's own baseline is not read
		env.Baseline = &m
	}
	r := &Result{
		Plan:          p,
		BrokerURL:     st.BrokerURL,
		Started:       st.Started,
		Elapsed:       st.Elapsed,
		Measured:      env,
		Timeline:      st.Timeline,
		Broker:        st.Broker,
		Clock:         st.Clock,
		CountersStart: st.CountersStart,
		CountersEnd:   st.CountersEnd,
		Interrupted:   st.Interrupted,
		Incomplete:    st.Incomplete,
		BrokerGone:    st.BrokerGone,
		ErrorSamples:  st.ErrorSamples,
		InFlightAtEnd: st.InFlightAtEnd,
		DrainQuiet:    st.DrainQuiet,
		RateWindow:    rateWindow(p, st),
		Baseline:      base,
	}
	for i := range st.Phases {
		r.Unsent += st.Phases[i].Total.Unsent
	}
	for _, ph := range st.Phases {
		r.Phases = append(r.Phases, PhaseSpan{Phase: ph.Phase, Start: ph.Start, End: ph.End})
	}

	steady := st.Phase(phase.Steady)
	if steady != nil {
		r.Late = steady.Total.Late
	}
	if p != nil {
		for gi, g := range p.Groups {
			grp := Group{Name: g.Name, Clients: g.Count, Publishes: g.Publish != nil, Subscribes: receives(&g)}
			if gi < len(st.Groups) {
				info := st.Groups[gi]
				grp.Clients, grp.Connected, grp.ConnectedAtEnd, grp.Lost = info.Clients, info.Connected, info.ConnectedAtEnd, info.Lost
			}
			if steady != nil && gi < len(steady.Groups) {
				grp.Late = steady.Groups[gi].Late
			}
			r.Groups = append(r.Groups, grp)
		}
	}
	r.Latency = latencyRows(st)
	r.Distributions = distributions(st)
	r.Histograms = histograms(st)

	for _, th := range ths {
		res := th.Eval(env)
		out := ThresholdOutcome{
			Expr: th.Source.Expr, Pos: th.Source.Pos, Builtin: th.Builtin,
			Pass: res.Pass, Values: res.Values, Reason: res.Reason,
		}
		if !res.Pass && res.Reason == "false" {
			if why, n := lateReason(env, res.Values); n > 0 {
				out.Reason, out.Late = why, n
			}
		}
		r.Thresholds = append(r.Thresholds, out)
	}
	judgeDisturbance(r, ths, st)
	r.Warnings = warnings(r, st)
	if od := overdriveWarning(p, st); od != "" {
		// First: the figures below it read differently once it is known.
		r.Warnings = append([]string{od}, r.Warnings...)
	}
	r.Warnings = append(r.Warnings, closedLoopNotes(p, st)...)
	r.Warnings = append(r.Warnings, listenWarnings(p, st)...)
	r.Warnings = append(r.Warnings, clockWarnings(st.Clock, env.Top)...)
	if base != nil && base.Result != nil {
		// Last: the comparison's notes read this run's verdict and
		// warnings.
		r.Comparison = Compare(base.Result, r, base.File, thisRun, DefaultTolerance)
	}
	return r
}

// latencyRows summarises the top-level histograms, scoped like the
// environment: messages over steady, connections over the whole run.
func latencyRows(st *stats.Stats) []LatencyRow {
	var steady, run stats.Metrics
	if ph := st.Phase(phase.Steady); ph != nil {
		steady.Merge(&stats.Metrics{Latency: ph.Total.Latency, Ack: ph.Total.Ack})
	}
	for i := range st.Phases {
		run.Merge(&stats.Metrics{Connect: st.Phases[i].Total.Connect, Subscribe: st.Phases[i].Total.Subscribe})
	}
	rows := []LatencyRow{{Name: "e2e"}, {Name: "ack"}, {Name: "connect"}, {Name: "subscribe"}}
	for i, h := range [...]*hdrhistogram.Histogram{steady.Latency, steady.Ack, run.Connect, run.Subscribe} {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		row := &rows[i]
		row.Samples = h.TotalCount()
		row.Min = micros(h.Min())
		row.Mean = microsF(h.Mean())
		row.P50 = micros(h.ValueAtQuantile(50))
		row.P90 = micros(h.ValueAtQuantile(90))
		row.P99 = micros(h.ValueAtQuantile(99))
		row.P999 = micros(h.ValueAtQuantile(99.9))
		row.Max = micros(h.Max())
	}
	return append(rows, rttRows(st)...)
}

// warnings lists what makes the figures misleading if read alone.
func warnings(r *Result, st *stats.Stats) []string {
	var ws []string
	for _, g := range r.Groups {
		if st.Elapsed > 0 && g.Connected < g.Clients {
			ws = append(ws, fmt.Sprintf("group %s: %d of its %d clients never connected", g.Name, g.Clients-g.Connected, g.Clients))
		}
		if g.Lost > 0 {
			ws = append(ws, fmt.Sprintf("group %s: %d %s lost %s connection and did not come back", g.Name, g.Lost, plural(g.Lost, "client"), pluralWord(g.Lost, "its", "their")))
		}
	}
	ws = append(ws, st.Notices...)
	var overlap int64
	for i := range st.Phases {
		overlap += st.Phases[i].Total.OverlapCopies
	}
	if overlap > 0 {
		ws = append(ws, fmt.Sprintf("the broker sent %d extra copies for overlapping subscriptions (one per matching filter, as MQTT 3.1.1 allows): counted as overlap_copies, not as duplicates or deliveries", overlap))
	}
	if r.Unsent > 0 {
		ws = append(ws, fmt.Sprintf("%d messages the schedule called for were never sent (connections down, the broker or the generator stalled, or publishing ended first): their deliveries count as lost (lost_unsent)", r.Unsent))
	}
	if w := lateWarning(st); w != "" {
		ws = append(ws, w)
	}
	if r.InFlightAtEnd > 0 {
		ws = append(ws, fmt.Sprintf("drain ended with %d publishes still awaiting their acknowledgement: drain was too short for what was in flight, or the broker stalled; deliveries of theirs that did not arrive count as lost_unacked", r.InFlightAtEnd))
	}
	if lr, ok := r.Measured.Top[metric.LateRate].(float64); ok && lr > lateWarnRate {
		ws = append(ws, fmt.Sprintf("generator fell behind its schedule: %d sends (%s) more than %s late%s",
			r.Late, fmtPercent(lr), fmtDuration(stats.LateThreshold), selfCPUCause(r.Timeline)))
	}
	if b := st.Broker; b != nil {
		if n := b.MessagesDropped + b.InflightDropped; n > 0 {
			ws = append(ws, fmt.Sprintf("the embedded broker dropped %d messages: losses below are the broker's, not mqplan's", n))
		}
	}
	var over, foreign, unexpected int64
	for i := range st.Phases {
		over += st.Phases[i].Total.OverRange
		foreign += st.Phases[i].Total.Foreign
		unexpected += st.Phases[i].Total.Unexpected
	}
	if unexpected > 0 {
		ws = append(ws, fmt.Sprintf("%d deliveries of this run's messages reached clients none of whose subscriptions match their topic (a subscription kept in a session from an earlier run, a broker that ignores no_local or misroutes): not counted as received", unexpected))
	}
	if foreign > 0 {
		ws = append(ws, fmt.Sprintf("%d deliveries were not messages of this run (wills, retained messages or other traffic on the broker): they are counted nowhere else", foreign))
	}
	if over > 0 {
		ws = append(ws, fmt.Sprintf("%d measurements above the histograms' 60s limit were counted but left out of the percentiles", over))
	}
	return ws
}

// Passed reports whether every threshold held. A plan without thresholds
// passes: the run itself is then the test. Whether the run completed is a
// separate question (Complete).
func (r *Result) Passed() bool {
	for _, t := range r.Thresholds {
		if !t.Pass {
			return false
		}
	}
	return true
}

// Complete reports whether the run ran to its end: not interrupted, and
// nothing made it give up.
func (r *Result) Complete() bool { return !r.Interrupted && r.Incomplete == "" }

// Verdict is VerdictIncomplete, VerdictFail, VerdictInconclusive or
// VerdictPass, in that order of precedence: an incomplete run's
// thresholds judge only part of a run, and a failure that mqplan's
// disturbance cannot explain (a lost message, a latency beyond it) fails
// the run whatever else it explains.
func (r *Result) Verdict() string {
	switch {
	case !r.Complete():
		return VerdictIncomplete
	case r.failedJudged() > 0:
		return VerdictFail
	case !r.Passed():
		return VerdictInconclusive
	default:
		return VerdictPass
	}
}

// failedJudged counts the failed thresholds that were judged (not
// explained by the disturbance).
func (r *Result) failedJudged() int {
	n := 0
	for _, t := range r.Thresholds {
		if !t.Pass && t.NotJudged == "" {
			n++
		}
	}
	return n
}

// Summary is the one-line verdict that ends the table, for example
// "PASS: 3 of 3 thresholds held (and 4 built-in checks)", "FAIL: 1 of 3
// thresholds failed", "FAIL: built-in check failed: unsent == 0 (unsent=50)"
// or "INCOMPLETE: interrupted (2 of 3 thresholds held on what was
// measured)". The plan's thresholds are counted as before; the built-in
// checks are named only when one fails, since then they are the news.
func (r *Result) Summary() string {
	failed, n, builtins := 0, 0, 0
	var builtinFailed []string
	late := ""
	for _, t := range r.Thresholds {
		if !t.Pass && t.Late > 0 && late == "" {
			late = t.Reason
		}
		if t.Builtin {
			builtins++
			if !t.Pass {
				builtinFailed = append(builtinFailed, t.Expr+" ("+measuredValues(t.Values)+")")
			}
			continue
		}
		n++
		if !t.Pass {
			failed++
		}
	}
	switch r.Verdict() {
	case VerdictIncomplete:
		s := VerdictIncomplete + ": " + r.incompleteReasons()
		if n > 0 {
			s += fmt.Sprintf(" (%d of %d %s held on what was measured)", n-failed, n, plural(n, "threshold"))
		}
		return s
	case VerdictFail:
		var parts []string
		if failed > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d %s failed", failed, n, plural(n, "threshold")))
		}
		if len(builtinFailed) > 0 {
			parts = append(parts, pluralWord(len(builtinFailed), "built-in check", "built-in checks")+" failed: "+strings.Join(builtinFailed, ", "))
		}
		if late != "" {
			parts = append(parts, late)
		}
		return VerdictFail + ": " + strings.Join(parts, "; ")
	case VerdictInconclusive:
		return r.inconclusiveSummary()
	default:
		extra := ""
		if builtins > 0 {
			extra = fmt.Sprintf(" (and %d built-in %s)", builtins, pluralWord(builtins, "check", "checks"))
		}
		if n == 0 {
			return VerdictPass + ": run completed (no thresholds)" + extra
		}
		return fmt.Sprintf("%s: %d of %d %s held%s", VerdictPass, n, n, plural(n, "threshold"), extra)
	}
}

// incompleteReasons says why the run is INCOMPLETE: "interrupted", the
// reason it could not complete, or both.
func (r *Result) incompleteReasons() string {
	var why []string
	if r.Interrupted {
		why = append(why, "interrupted")
	}
	if r.Incomplete != "" {
		why = append(why, r.Incomplete)
	}
	return strings.Join(why, "; ")
}

func plural(n int, word string) string {
	return pluralWord(n, word, word+"s")
}

// pluralWord is one when n is 1, else many.
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// name is the plan's name, tolerating a missing plan.
func (r *Result) name() string {
	if r.Plan == nil {
		return ""
	}
	return r.Plan.Name
}

// titled is the plan's name ("-" when unknown) with the run's label after
// it in brackets when there is one: "fanin [emqx-5.8]", the name every
// output's title shows.
func (r *Result) titled() string {
	if r.Label == "" {
		return orDash(r.name())
	}
	return orDash(r.name()) + " [" + r.Label + "]"
}

// brokerLabel names the broker in a report's header: the redacted URL the
// clients connected to, or for a plan's embedded broker "embedded
// (127.0.0.1:PORT)", so that a reader does not take the in-process broker
// for one listening on the machine.
func (r *Result) brokerLabel() string {
	if r.Plan != nil && r.Plan.Broker.IsEmbedded() {
		if u, err := url.Parse(r.BrokerURL); err == nil && u.Host != "" {
			return "embedded (" + u.Host + ")"
		}
	}
	return orDash(redactURL(r.BrokerURL))
}

// shownLength is the length the header shows for a phase: what it lasted,
// or 0 for a warmup or ramp the plan leaves out, which the run passes
// through in a few hundred nanoseconds that no reader should see as a
// phase that ran.
func (r *Result) shownLength(ph PhaseSpan) time.Duration {
	if p := r.Plan; p != nil && (ph.Phase == phase.Warmup && p.Warmup == 0 || ph.Phase == phase.Ramp && p.Ramp == 0) {
		return 0
	}
	return ph.Duration()
}

// lowSelfCPU is the busiest second of mqplan's own CPU, in percent of one
// core, below which a generator that fell behind was most likely kept
// from the CPU by another process rather than busy itself: a generator
// at half a core in its busiest second had the time to keep its schedule
// had the scheduler given it the CPU when due.
const lowSelfCPU = 50

// selfCPUCause names mqplan's own CPU beside the generator's lateness, so
// that a reader can tell a busy generator from a starved one: "" when
// the run sampled none (not Linux).
func selfCPUCause(timeline []stats.Second) string {
	u := usageOf(timeline, func(s *stats.Second) stats.ProcSample { return s.Self })
	if u.Seconds == 0 {
		return ""
	}
	s := fmt.Sprintf("; mqplan's own CPU was %.0f%% of one core (mean; busiest second %.0f%%)", u.CPUMean, u.CPUMax)
	if u.CPUMax < lowSelfCPU {
		s += ": another process likely held the CPU"
	}
	return s
}
