package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"io"
	"time"

	"github.com/mqplan/mqplan/internal/outfile"
)

// JSONVersion is the version of the JSON report's shape. It changes only
// when a key is removed or changes meaning; new keys may appear without it.
const JSONVersion = 1

// jsonDoc is the JSON report's top level; see WriteJSON for its shape.
type jsonDoc struct {
	Version int `json:"version"`
	// MqplanVersion is Result.MqplanVersion, the mqplan that wrote the
	// document; added in version 1 later, absent from older documents.
	MqplanVersion string `json:"mqplan_version,omitempty"`
	// Label is Result.Label (--label), absent when not given.
	Label string `json:"label,omitempty"`
	// Hostname is Result.Hostname, absent when not known; kept so that
	// the JUnit report re-rendered from the result is the run's own.
	Hostname string `json:"hostname,omitempty"`
	// CommandLine is Result.CommandLine, secrets masked; absent when not
	// known.
	CommandLine string          `json:"command_line,omitempty"`
	Verdict     string          `json:"verdict"`
	Summary     string          `json:"summary"`
	Passed      bool            `json:"passed"`
	Complete    bool            `json:"complete"`
	Interrupted bool            `json:"interrupted"`
	Incomplete  string          `json:"incomplete"`
	Plan        *jsonPlan       `json:"plan"`
	BrokerURL   string          `json:"broker_url"`
	Started     time.Time       `json:"started"`
	Elapsed     jsonDuration    `json:"elapsed"`
	Warnings    []string        `json:"warnings"`
	Thresholds  []jsonThreshold `json:"thresholds"`
	Phases      []jsonPhase     `json:"phases"`
	Groups      []jsonGroup     `json:"groups"`
	Latency     []jsonLatency   `json:"latency"`
	// Distributions were added after version 1 first shipped: a reader
	// of an older document finds the key absent.
	Distributions []jsonDistribution `json:"distributions"`
	// Histograms were added in version 1 later: absent from older
	// documents.
	Histograms []jsonHistogram `json:"histograms"`
	Metrics    jsonMetrics     `json:"metrics"`
	Timeline   []jsonSecond    `json:"timeline"`
	Broker     *jsonBroker     `json:"broker"`
	// BrokerCounters was added in version 1 later: absent when the broker's
	// own counters were not sampled (and in older documents).
	BrokerCounters *jsonBrokerCounters `json:"broker_counters,omitempty"`
	// Clock was added in version 1 later: a sharded run's clocks
	// (report/clock.go), absent for a single process.
	Clock        *jsonClock `json:"clock,omitempty"`
	ErrorSamples []string   `json:"error_samples"`
	// Unsent, InFlightAtEnd and DrainQuiet: see Result.
	Unsent        int64        `json:"unsent"`
	InFlightAtEnd int64        `json:"in_flight_at_end"`
	DrainQuiet    jsonDuration `json:"drain_quiet"`
	// RateWindow: see Result ("0s": the rates are over the steady phase).
	RateWindow jsonDuration `json:"rate_window"`
	// Late is Result.Late, the steady phase's late sends (a pointer so
	// that ReadJSON knows a document written before the key).
	Late *int64 `json:"late"`
	// Baseline is Result.Comparison, the comparison with the baseline,
	// in mqplan compare's JSON shape; null without a baseline (and
	// absent from a document written before the key).
	Baseline *jsonComparison `json:"baseline"`
	// Disturbance is Result.Disturbance, how disturbed mqplan itself was
	// over steady; absent where it was not measured.
	Disturbance *jsonDisturbance `json:"disturbance,omitempty"`
}

// jsonDisturbance is Result.Disturbance in the JSON document.
type jsonDisturbance struct {
	Phase     string        `json:"phase"`
	Seconds   int           `json:"seconds"`
	Disturbed int           `json:"disturbed"`
	Starved   int           `json:"starved"`
	Saturated int           `json:"saturated"`
	Share     float64       `json:"share"`
	CPUWait   jsonDuration  `json:"cpu_wait"`
	WaitMax   jsonDuration  `json:"cpu_wait_max"`
	BusyMax   float64       `json:"busy_max"`
	Pressure  *jsonDuration `json:"cpu_pressure,omitempty"`
	LagP99    jsonDuration  `json:"lag_p99"`
	LagMax    jsonDuration  `json:"lag_max"`
	// Significant says the window was disturbed enough for its latency
	// to be mqplan's.
	Significant bool `json:"significant"`
}

// disturbanceJSON is d in the JSON document, nil when not measured.
func disturbanceJSON(d *Disturbance) *jsonDisturbance {
	if d == nil {
		return nil
	}
	j := &jsonDisturbance{Phase: d.Phase.String(), Seconds: d.Seconds, Disturbed: d.Disturbed, Starved: d.Starved, Saturated: d.Saturated,
		Share: d.Share(), CPUWait: jsonDuration(d.Wait), WaitMax: jsonDuration(d.WaitMax), BusyMax: d.BusyMax, LagP99: jsonDuration(d.LagP99), LagMax: jsonDuration(d.LagMax),
		Significant: d.Significant()}
	if d.HasPressure {
		j.Pressure = optDuration(&d.Pressure)
	}
	return j
}

// disturbance reads it back; figures no measurement gives are refused.
func (j *jsonDisturbance) disturbance() (*Disturbance, error) {
	if j == nil {
		return nil, nil
	}
	ph, ok := phase.Parse(j.Phase)
	if !ok {
		return nil, fmt.Errorf("disturbance: unknown phase %q", j.Phase)
	}
	d := &Disturbance{Phase: ph, Seconds: j.Seconds, Disturbed: j.Disturbed, Starved: j.Starved, Saturated: j.Saturated,
		Wait: j.CPUWait.duration(), WaitMax: j.WaitMax.duration(), BusyMax: j.BusyMax, LagP99: j.LagP99.duration(), LagMax: j.LagMax.duration()}
	if j.Pressure != nil {
		d.Pressure, d.HasPressure = j.Pressure.duration(), true
	}
	if d.Seconds < 0 || d.Disturbed < 0 || d.Disturbed > d.Seconds || d.Starved < 0 || d.Starved > d.Disturbed ||
		d.Saturated < 0 || d.Saturated > d.Disturbed || d.Wait < 0 || d.WaitMax < 0 || d.WaitMax > d.Wait || d.BusyMax < 0 || d.Pressure < 0 || d.LagP99 < 0 || d.LagMax < 0 {
		return nil, fmt.Errorf("disturbance: the counts and durations must be within 0 and its seconds, got %+v", *j)
	}
	return d, nil
}

type jsonThreshold struct {
	Expr string `json:"expr"`
	// Builtin marks mqplan's own integrity checks (no line, no column).
	Builtin bool        `json:"builtin"`
	Line    int         `json:"line,omitempty"`
	Column  int         `json:"column,omitempty"`
	Pass    bool        `json:"pass"`
	Values  []jsonValue `json:"values"`
	Reason  string      `json:"reason,omitempty"`
	// Late is, on a failed loss threshold, the lost_late of the scope it
	// read (ThresholdOutcome.Late).
	Late int `json:"late,omitempty"`
	// NotJudged, on a failed threshold, is the evidence that mqplan's own
	// disturbance explains its failure (ThresholdOutcome.NotJudged).
	NotJudged string `json:"not_judged,omitempty"`
}

type jsonValue struct {
	Metric  string `json:"metric"`
	Value   any    `json:"value"`
	Missing bool   `json:"missing"`
}

type jsonPhase struct {
	Name     string       `json:"name"`
	Start    jsonDuration `json:"start"`
	End      jsonDuration `json:"end"`
	Duration jsonDuration `json:"duration"`
}

type jsonGroup struct {
	Name           string `json:"name"`
	Publishes      bool   `json:"publishes"`
	Subscribes     bool   `json:"subscribes"`
	Clients        int    `json:"clients"`
	Connected      int    `json:"connected"`
	ConnectedAtEnd int    `json:"connected_at_end"`
	Lost           int    `json:"lost"`
	Late           int64  `json:"late"`
}

// jsonLatency leaves the statistics out (null) when there are no samples,
// so that no script mistakes an empty histogram for a 0 latency.
type jsonLatency struct {
	Name    string        `json:"name"`
	Samples int64         `json:"samples"`
	Min     *jsonDuration `json:"min"`
	Mean    *jsonDuration `json:"mean"`
	P50     *jsonDuration `json:"p50"`
	P90     *jsonDuration `json:"p90"`
	P99     *jsonDuration `json:"p99"`
	P999    *jsonDuration `json:"p999"`
	Max     *jsonDuration `json:"max"`
}

// jsonDistribution is a Distribution; group is "" for all groups.
type jsonDistribution struct {
	Name    string           `json:"name"`
	Group   string           `json:"group"`
	Samples int64            `json:"samples"`
	Points  []jsonPercentile `json:"points"`
}

type jsonPercentile struct {
	Percentile float64      `json:"percentile"`
	Value      jsonDuration `json:"value"`
}

type jsonMetrics struct {
	Top    jsonMetricSet            `json:"top"`
	Groups map[string]jsonMetricSet `json:"groups"`
	Phases map[string]jsonMetricSet `json:"phases"`
	// Stages is a staged plan's stages.<name>.* (absent without stages).
	Stages map[string]jsonMetricSet `json:"stages,omitempty"`
}

type jsonSecond struct {
	At          jsonDuration `json:"at"`
	Phase       string       `json:"phase"`
	Connected   int          `json:"connected"`
	Lost        int          `json:"lost"`
	Sent        int64        `json:"sent"`
	Received    int64        `json:"received"`
	Errors      int64        `json:"errors"`
	Disconnects int64        `json:"disconnects"`
	// P50, P99 and Max are null in a second without deliveries.
	P50    *jsonDuration `json:"p50"`
	P99    *jsonDuration `json:"p99"`
	Max    *jsonDuration `json:"max"`
	LagMax jsonDuration  `json:"lag_max"`
	// Groups is the second per plan group ([] in a timeline kept
	// without them).
	Groups []jsonGroupSecond `json:"groups"`
	// Broker and Self are absent in a second whose process was not
	// sampled (stats.ProcSample.Sampled false).
	Broker *jsonProcSample `json:"broker,omitempty"`
	Self   *jsonProcSample `json:"self,omitempty"`
	// Gen is mqplan's own disturbance that second (stats.GenSecond),
	// absent when it was not measured.
	Gen *jsonGenSecond `json:"gen,omitempty"`
	// Counters are the broker's own counters as last reported that
	// second (broker.metrics sys or prometheus), by name; absent when none.
	Counters jsonCounters `json:"counters,omitempty"`
}

// jsonCounters is a reading of the broker's own counters
// (brokerstat.Counters): the counters it holds by name (clients,
// publish_received, ...), nil when it holds none.
type jsonCounters map[string]int64

// countersJSON is cs in the JSON document.
func countersJSON(cs brokerstat.Counters) jsonCounters { return cs.ByName() }

// counters reads a reading back; an unknown name or a negative value is
// refused, as no reading holds one.
func (j jsonCounters) counters() (brokerstat.Counters, error) { return brokerstat.FromNames(j) }

// jsonBrokerCounters are the broker's own counters at the run's start and
// end (Result.CountersStart and CountersEnd).
type jsonBrokerCounters struct {
	Start jsonCounters `json:"start"`
	End   jsonCounters `json:"end"`
}

// jsonProcSample is one process's second (stats.ProcSample, when sampled).
type jsonProcSample struct {
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   int64   `json:"rss_bytes"`
}

// procSample is p in the JSON document: nil when it was not sampled.
func procSample(p stats.ProcSample) *jsonProcSample {
	if !p.Sampled {
		return nil
	}
	return &jsonProcSample{CPUPercent: p.CPU, RSSBytes: p.RSS}
}

// sample reads a process's second back (not sampled when absent); a
// negative figure is refused, as no reading gives one.
func (j *jsonProcSample) sample() (stats.ProcSample, error) {
	if j == nil {
		return stats.ProcSample{}, nil
	}
	if j.CPUPercent < 0 || j.RSSBytes < 0 {
		return stats.ProcSample{}, fmt.Errorf("cpu_percent %v and rss_bytes %d must not be negative", j.CPUPercent, j.RSSBytes)
	}
	return stats.ProcSample{Sampled: true, CPU: j.CPUPercent, RSS: j.RSSBytes}, nil
}

// jsonGenSecond is mqplan's own disturbance in one second
// (stats.GenSecond, when sampled): its threads' wait for a CPU, its CPU
// use as a share of the CPUs it was given, and the machine's CPU pressure
// (absent when the kernel has none).
type jsonGenSecond struct {
	CPUWait  jsonDuration  `json:"cpu_wait"`
	Delay    jsonDuration  `json:"cpu_delay"`
	Busy     float64       `json:"busy"`
	Pressure *jsonDuration `json:"cpu_pressure,omitempty"`
}

// genSample is g in the JSON document: nil when it was not sampled.
func genSample(g stats.GenSecond) *jsonGenSecond {
	if !g.Sampled {
		return nil
	}
	j := &jsonGenSecond{CPUWait: jsonDuration(g.Wait), Delay: jsonDuration(g.Delay), Busy: g.Busy}
	if g.HasPressure {
		j.Pressure = optDuration(&g.Pressure)
	}
	return j
}

// sample reads a second's disturbance back; a negative figure is refused.
func (j *jsonGenSecond) sample() (stats.GenSecond, error) {
	if j == nil {
		return stats.GenSecond{}, nil
	}
	g := stats.GenSecond{Sampled: true, Wait: j.CPUWait.duration(), Delay: j.Delay.duration(), Busy: j.Busy}
	if j.Pressure != nil {
		g.Pressure, g.HasPressure = j.Pressure.duration(), true
	}
	if g.Wait < 0 || g.Delay < 0 || g.Busy < 0 || g.Busy > 1e6 || g.Pressure < 0 {
		return stats.GenSecond{}, fmt.Errorf("cpu_wait %v, busy %v and cpu_pressure %v must not be negative", g.Wait, g.Busy, g.Pressure)
	}
	return g, nil
}

// jsonGroupSecond is one group's share of a second (stats.GroupSecond).
type jsonGroupSecond struct {
	Group       string `json:"group"`
	Connected   int    `json:"connected"`
	Lost        int    `json:"lost"`
	Sent        int64  `json:"sent"`
	Received    int64  `json:"received"`
	Errors      int64  `json:"errors"`
	Disconnects int64  `json:"disconnects"`
	Acked       int64  `json:"acked"`
	Duplicates  int64  `json:"duplicates"`
	// P50, P99 and Max are null when the group had no latency sample.
	P50    *jsonDuration `json:"p50"`
	P99    *jsonDuration `json:"p99"`
	Max    *jsonDuration `json:"max"`
	LagMax jsonDuration  `json:"lag_max"`
}

type jsonBroker struct {
	MessagesReceived int64 `json:"messages_received"`
	MessagesSent     int64 `json:"messages_sent"`
	MessagesDropped  int64 `json:"messages_dropped"`
	InflightDropped  int64 `json:"inflight_dropped"`
	ClientsMaximum   int64 `json:"clients_maximum"`
}

func (r *Result) doc() jsonDoc {
	d := jsonDoc{
		Version:       JSONVersion,
		MqplanVersion: r.MqplanVersion,
		Label:         r.Label,
		Hostname:      r.Hostname,
		CommandLine:   r.CommandLine,
		Verdict:       r.Verdict(),
		Summary:       r.Summary(),
		Passed:        r.Passed(),
		Complete:      r.Complete(),
		Interrupted:   r.Interrupted,
		Incomplete:    r.Incomplete,
		Plan:          planJSON(r.Plan),
		BrokerURL:     redactURL(r.BrokerURL),
		Started:       r.Started,
		Elapsed:       jsonDuration(r.Elapsed),
		Warnings:      list(r.headerWarnings()),
		Thresholds:    []jsonThreshold{},
		Phases:        []jsonPhase{},
		Groups:        []jsonGroup{},
		Latency:       []jsonLatency{},
		Distributions: []jsonDistribution{},
		Histograms:    histogramsJSON(r.Histograms),
		Timeline:      []jsonSecond{},
		ErrorSamples:  list(r.ErrorSamples),
		Unsent:        r.Unsent,
		InFlightAtEnd: r.InFlightAtEnd,
		DrainQuiet:    jsonDuration(r.DrainQuiet),
		RateWindow:    jsonDuration(r.RateWindow),
		Late:          &r.Late,
		Disturbance:   disturbanceJSON(r.Disturbance),
		Metrics: jsonMetrics{Top: metricSetJSON(r.Measured.Top), Groups: metricSetsJSON(r.Measured.Groups),
			Phases: metricSetsJSON(r.Measured.Phases), Stages: stageSetsJSON(r.Measured.Stages)},
	}
	for _, t := range r.Thresholds {
		jt := jsonThreshold{Expr: t.Expr, Builtin: t.Builtin, Line: t.Pos.Line, Column: t.Pos.Col, Pass: t.Pass,
			Reason: t.Reason, Late: t.Late, NotJudged: t.NotJudged, Values: []jsonValue{}}
		for _, v := range t.Values {
			jv := jsonValue{Metric: v.Ref.String(), Missing: v.Missing}
			if !v.Missing {
				jv.Value = valueJSON(v.Value)
			}
			jt.Values = append(jt.Values, jv)
		}
		d.Thresholds = append(d.Thresholds, jt)
	}
	for _, p := range r.Phases {
		d.Phases = append(d.Phases, jsonPhase{Name: p.Phase.String(), Start: jsonDuration(p.Start),
			End: jsonDuration(p.End), Duration: jsonDuration(p.Duration())})
	}
	for _, g := range r.Groups {
		d.Groups = append(d.Groups, jsonGroup{Name: g.Name, Publishes: g.Publishes, Subscribes: g.Subscribes,
			Clients: g.Clients, Connected: g.Connected, ConnectedAtEnd: g.ConnectedAtEnd, Lost: g.Lost, Late: g.Late})
	}
	for _, l := range r.Latency {
		jl := jsonLatency{Name: l.Name, Samples: l.Samples}
		if l.Samples > 0 {
			jl.Min, jl.Mean, jl.P50, jl.P90 = optDuration(&l.Min), optDuration(&l.Mean), optDuration(&l.P50), optDuration(&l.P90)
			jl.P99, jl.P999, jl.Max = optDuration(&l.P99), optDuration(&l.P999), optDuration(&l.Max)
		}
		d.Latency = append(d.Latency, jl)
	}
	for _, dist := range r.Distributions {
		jd := jsonDistribution{Name: dist.Name, Group: dist.Group, Samples: dist.Samples, Points: []jsonPercentile{}}
		for _, pt := range dist.Points {
			jd.Points = append(jd.Points, jsonPercentile{Percentile: pt.Percentile, Value: jsonDuration(pt.Value)})
		}
		d.Distributions = append(d.Distributions, jd)
	}
	for _, s := range r.Timeline {
		js := jsonSecond{At: jsonDuration(s.At), Phase: s.Phase.String(), Connected: s.Connected, Lost: s.Lost,
			Sent: s.Sent, Received: s.Received, Errors: s.Errors, Disconnects: s.Disconnects, LagMax: jsonDuration(s.LagMax)}
		if hasLatency(s.Received, s.Max) {
			js.P50, js.P99, js.Max = optDuration(&s.P50), optDuration(&s.P99), optDuration(&s.Max)
		}
		js.Groups = make([]jsonGroupSecond, len(s.Groups))
		for i, g := range s.Groups {
			jg := jsonGroupSecond{Group: g.Group, Connected: g.Connected, Lost: g.Lost, Sent: g.Sent, Received: g.Received,
				Errors: g.Errors, Disconnects: g.Disconnects, Acked: g.Acked, Duplicates: g.Duplicates, LagMax: jsonDuration(g.LagMax)}
			if hasLatency(g.Received, g.Max) {
				jg.P50, jg.P99, jg.Max = optDuration(&g.P50), optDuration(&g.P99), optDuration(&g.Max)
			}
			js.Groups[i] = jg
		}
		js.Broker, js.Self = procSample(s.Broker), procSample(s.Self)
		js.Gen = genSample(s.Gen)
		js.Counters = countersJSON(s.Counters)
		d.Timeline = append(d.Timeline, js)
	}
	if b := r.Broker; b != nil {
		jb := jsonBroker(*b)
		d.Broker = &jb
	}
	if r.CountersStart.Sampled() || r.CountersEnd.Sampled() {
		d.BrokerCounters = &jsonBrokerCounters{Start: countersJSON(r.CountersStart), End: countersJSON(r.CountersEnd)}
	}
	d.Clock = clockJSON(r.Clock)
	if r.Comparison != nil {
		d.Baseline = r.Comparison.doc()
	}
	return d
}

// hasLatency reports whether a second (or a group's share of one) has
// latency figures: it received something, and measured it (every sample
// is 1µs at least, so a zero Max is none; deliveries counted at the end
// of a run without a latency, see stats.GroupSecond, leave it zero).
func hasLatency(received int64, max time.Duration) bool { return received > 0 && max > 0 }

// A compile-time check that the JSON mirror of stats.Broker still has the
// same fields: the conversion fails to compile when they drift apart, so a
// new field cannot silently go missing from the report. (jsonSecond
// differs in its latency fields' types; TestJSONSecondMirrorsSecond checks it.)
var _ = jsonBroker(stats.Broker{})

// MarshalJSON gives a Result the report's JSON shape, so that json.Marshal
// on a Result agrees with WriteJSON.
func (r *Result) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := encode(&b, r.doc()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// WriteJSON writes the full result as an indented JSON document, ending
// with a newline. Conventions, chosen so that scripts need no guessing:
//
//   - Every duration is a Go duration string ("1.234ms", "30s", "0s"), the
//     same syntax thresholds are written in, exact to the nanosecond and
//     readable by time.ParseDuration. This includes the plan echo, whose
//     own types would otherwise print nanosecond integers.
//   - Times are RFC 3339 with nanoseconds, as Go writes them.
//   - A metric with no samples is absent from its metric set; a threshold
//     value that was missing has "value": null and "missing": true.
//   - Keys of structures come in a fixed order; map keys are sorted. The
//     same Result always gives the same bytes.
//   - Secrets (plans.Secret) appear only as "******".
//
// The document's top-level keys:
//
//	version      JSONVersion
//	mqplan_version  the mqplan that wrote it, as `mqplan version` prints
//	             it less "mqplan" ("v0.4.0 (go1.26.0, rev ...)"); absent
//	             when not known
//	label        the run's --label, absent when not given
//	hostname     the machine the run ran on, absent when not known
//	command_line the command line that made the run, secrets masked;
//	             absent when not known
//	verdict      "PASS", "FAIL" or "INCOMPLETE"; summary: the table's last line
//	passed       every threshold held; complete: the run ran to its end
//	interrupted, incomplete   why a run is INCOMPLETE
//	plan         the plan as run (name, description, file, broker, groups, ...)
//	broker_url, started, elapsed
//	warnings     as in the table, never left out
//	thresholds   [{expr, line, column, pass, values: [{metric, value, missing}], reason}]
//	phases       [{name, start, end, duration}] as offsets from the start
//	groups       [{name, role flags, clients, connected, connected_at_end, late}]
//	latency      [{name, samples, min, mean, p50, p90, p99, p999, max}]
//	histograms   [{name, samples, buckets: [{le, count}]}]: the steady
//	             phase's e2e and ack latency, counts per bucket
//	distributions  [{name, group, samples, points: [{percentile, value}]}]:
//	             the steady phase's e2e and ack latency as percentile
//	             curves, all groups together (group "") and per group; the
//	             last point is the maximum, at percentile 100
//	metrics      {top: {...}, groups: {name: {...}}, phases: {name: {...}}},
//	             the sets thresholds read, keyed by canonical metric name
//	timeline     per-second figures: [{at, phase, connected, lost, sent,
//	             received, errors, disconnects, p50, p99, max, lag_max,
//	             groups: [{group, the same figures for that plan group}]}]
//	broker       the embedded broker's counters, or null
//	error_samples
//	unsent, in_flight_at_end, drain_quiet, rate_window, late   see Result
//	baseline     with --baseline, the comparison with the baseline run,
//	             as mqplan compare --out json writes it (a: the baseline,
//	             named by its file as given, its plan and start; b: this
//	             run; per metric a, b, delta and change); null without
//
// ReadJSON reads the document back.
func WriteJSON(w io.Writer, r *Result) error {
	var b bytes.Buffer
	if err := encode(&b, r.doc()); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// encode writes d as indented JSON and a newline with encoding/json. The
// document types (json_dto.go) already hold what the conventions of
// WriteJSON need, so the standard encoder only has to be told not to
// escape HTML characters (descriptions and error samples stay legible).
func encode(b *bytes.Buffer, d jsonDoc) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("encoding the JSON report: %w", err)
	}
	return nil
}

// WriteJSONFile writes the JSON report to path without clobbering
// anything (see internal/outfile): a regular file is replaced atomically
// (a temporary file in the same directory, synced and renamed over it), so
// a reader (a CI step, a dashboard polling the file) sees either the old
// report or the whole new one, never a torn one, and a failed write leaves
// no temporary behind; a FIFO or a device is written through, never
// replaced by a regular file. A new file gets 0666 less the umask, an
// existing one keeps its mode.
func WriteJSONFile(path string, r *Result) error {
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		return err
	}
	if err := outfile.WriteFile(path, b.Bytes()); err != nil {
		return fmt.Errorf("writing report %s: %w", path, err)
	}
	return nil
}
