package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// MaxJSONSize bounds what ReadJSON reads. A result grows with the run's
// length, one timeline entry of about 300 bytes a second (more with
// per-group figures): a day-long soak writes tens of megabytes, a
// week-long one a few hundred, so 1 GiB leaves room while keeping a wrong
// file (a device, a disk image) from exhausting memory.
const MaxJSONSize = 1 << 30

// ReadJSON reads back a result that WriteJSON wrote, so that a saved run
// re-renders in any format (mqplan report) and compares with another
// (mqplan compare) without its broker or its stats. Writing what it reads
// gives the same bytes again: every key WriteJSON writes is read.
//
// A document of another JSONVersion, or one that is not an mqplan result,
// is refused with a one-line error rather than read into a wrong report;
// so is a document whose verdict disagrees with its own thresholds (a
// hand-edited file). Keys it does not know are ignored: a newer mqplan may
// add keys without changing the version. At most MaxJSONSize bytes are
// read.
//
// What the JSON does not hold stays zero: the plan's source positions
// other than the thresholds' lines and columns, and the plan's compiled
// form. Secrets were never written, so they read back as "******".
func ReadJSON(r io.Reader) (*Result, error) { return readJSON(r, MaxJSONSize) }

// readJSON is ReadJSON with its size bound given, for tests.
func readJSON(r io.Reader, limit int64) (*Result, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("not an mqplan result: larger than the %s a result may have", sizeText(limit))
	}
	// The version comes first, on its own (json.Unmarshal also refuses
	// anything after the document), so that a document of another
	// version is named as such rather than failing on a key whose shape
	// changed.
	var head struct {
		Version *json.RawMessage `json:"version"`
		Verdict *string          `json:"verdict"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not an mqplan result: %s", jsonError(data, err))
	}
	if head.Version == nil || head.Verdict == nil {
		return nil, errors.New(`not an mqplan result: no "version" or "verdict" key (write one with mqplan run --out json=FILE)`)
	}
	var version int
	if err := json.Unmarshal(*head.Version, &version); err != nil {
		v := string(*head.Version)
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return nil, fmt.Errorf("not an mqplan result: \"version\" is %q, not a number", v)
	}
	switch {
	case version > JSONVersion:
		return nil, fmt.Errorf("the result is JSON version %d, written by a newer mqplan; this mqplan reads version %d: use the mqplan that wrote it", version, JSONVersion)
	case version < JSONVersion:
		return nil, fmt.Errorf("the result is JSON version %d, written by an older mqplan; this mqplan reads version %d: re-render it with the mqplan that wrote it", version, JSONVersion)
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var d jsonDoc
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("reading the result: %s", jsonError(data, err))
	}
	res, err := d.result()
	if err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	if err := checkResult(res); err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	if got := res.Verdict(); got != d.Verdict {
		return nil, fmt.Errorf("reading the result: its verdict %q disagrees with its thresholds and completion, which give %q: the file was edited", d.Verdict, got)
	}
	return res, nil
}

// sizeText is a size limit for messages: "1 GiB", "1000 bytes".
func sizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// jsonError words a decoding error with the line it happened on, when the
// decoder knows the offset.
func jsonError(data []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err.Error()
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Sprintf("line %d: %v", line, err)
}

// UnmarshalJSON reads a duration as MarshalJSON wrote it.
func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string like \"1.5ms\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: %w", s, err)
	}
	*d = jsonDuration(v)
	return nil
}

// duration is an optional duration's value, zero when absent.
func (d *jsonDuration) duration() time.Duration {
	if d == nil {
		return 0
	}
	return time.Duration(*d)
}

// result converts a decoded document back into the Result it was written
// from: the inverse of doc.
func (d *jsonDoc) result() (*Result, error) {
	r := &Result{
		Plan:          d.Plan.plan(),
		BrokerURL:     d.BrokerURL,
		Started:       d.Started,
		Elapsed:       time.Duration(d.Elapsed),
		Interrupted:   d.Interrupted,
		Incomplete:    d.Incomplete,
		ErrorSamples:  nonEmpty(d.ErrorSamples),
		Unsent:        d.Unsent,
		InFlightAtEnd: d.InFlightAtEnd,
		DrainQuiet:    time.Duration(d.DrainQuiet),
		RateWindow:    time.Duration(d.RateWindow),
	}
	// The plan's own warnings come first in the document; the Result
	// holds the run's only (see headerWarnings).
	ws := d.Warnings
	if r.Plan != nil && r.Plan.Broker.TLS != nil && r.Plan.Broker.TLS.InsecureSkipVerify && len(ws) > 0 && ws[0] == insecureWarning {
		ws = ws[1:]
	}
	r.Warnings = nonEmpty(ws)

	for i, t := range d.Thresholds {
		o := ThresholdOutcome{Expr: t.Expr, Builtin: t.Builtin, Pass: t.Pass, Reason: t.Reason}
		if t.Line > 0 && r.Plan != nil {
			o.Pos = plans.Pos{File: r.Plan.File, Line: t.Line, Col: t.Column}
		} else {
			o.Pos = plans.Pos{Line: t.Line, Col: t.Column}
		}
		for _, v := range t.Values {
			ref, err := parseRef(v.Metric)
			if err != nil {
				return nil, fmt.Errorf("thresholds[%d]: %w", i, err)
			}
			tv := threshold.Value{Ref: ref, Missing: v.Missing}
			if !v.Missing {
				if tv.Value, err = metricValue(ref.Metric, v.Value); err != nil {
					return nil, fmt.Errorf("thresholds[%d]: %s: %w", i, v.Metric, err)
				}
			}
			o.Values = append(o.Values, tv)
		}
		r.Thresholds = append(r.Thresholds, o)
	}
	for _, p := range d.Phases {
		ph, ok := phase.Parse(p.Name)
		if !ok {
			return nil, fmt.Errorf("phases: unknown phase %q (phases: %s)", p.Name, strings.Join(phase.Names(), ", "))
		}
		r.Phases = append(r.Phases, PhaseSpan{Phase: ph, Start: time.Duration(p.Start), End: time.Duration(p.End)})
	}
	late, haveLate := int64(0), d.Late != nil
	if haveLate {
		late = *d.Late
	}
	for _, g := range d.Groups {
		r.Groups = append(r.Groups, Group{Name: g.Name, Publishes: g.Publishes, Subscribes: g.Subscribes,
			Clients: g.Clients, Connected: g.Connected, ConnectedAtEnd: g.ConnectedAtEnd, Lost: g.Lost, Late: g.Late})
		if !haveLate {
			// Written before "late" was: the steady total is the
			// merge of the groups.
			late += g.Late
		}
	}
	r.Late = late
	for _, l := range d.Latency {
		r.Latency = append(r.Latency, LatencyRow{Name: l.Name, Samples: l.Samples,
			Min: l.Min.duration(), Mean: l.Mean.duration(), P50: l.P50.duration(), P90: l.P90.duration(),
			P99: l.P99.duration(), P999: l.P999.duration(), Max: l.Max.duration()})
	}
	for _, dist := range d.Distributions {
		rd := Distribution{Name: dist.Name, Group: dist.Group, Samples: dist.Samples}
		for _, pt := range dist.Points {
			rd.Points = append(rd.Points, PercentilePoint{Percentile: pt.Percentile, Value: time.Duration(pt.Value)})
		}
		r.Distributions = append(r.Distributions, rd)
	}
	var err error
	if r.Measured.Top, err = d.Metrics.Top.set(); err != nil {
		return nil, fmt.Errorf("metrics.top: %w", err)
	}
	if r.Measured.Groups, err = sets(d.Metrics.Groups); err != nil {
		return nil, fmt.Errorf("metrics.groups.%w", err)
	}
	if r.Measured.Phases, err = sets(d.Metrics.Phases); err != nil {
		return nil, fmt.Errorf("metrics.phases.%w", err)
	}
	for i, s := range d.Timeline {
		ph, ok := phase.Parse(s.Phase)
		if !ok {
			return nil, fmt.Errorf("timeline[%d]: unknown phase %q", i, s.Phase)
		}
		sec := stats.Second{At: time.Duration(s.At), Phase: ph, Connected: s.Connected,
			Lost: s.Lost, Sent: s.Sent, Received: s.Received, Errors: s.Errors, Disconnects: s.Disconnects,
			P50: s.P50.duration(), P99: s.P99.duration(), Max: s.Max.duration(), LagMax: time.Duration(s.LagMax)}
		for _, g := range s.Groups {
			sec.Groups = append(sec.Groups, stats.GroupSecond{Group: g.Group, Connected: g.Connected, Lost: g.Lost,
				Sent: g.Sent, Received: g.Received, Errors: g.Errors, Disconnects: g.Disconnects,
				Acked: g.Acked, Duplicates: g.Duplicates, P50: g.P50.duration(), P99: g.P99.duration(), Max: g.Max.duration(), LagMax: time.Duration(g.LagMax)})
		}
		if sec.Broker, err = s.Broker.sample(); err != nil {
			return nil, fmt.Errorf("timeline[%d].broker: %w", i, err)
		}
		if sec.Self, err = s.Self.sample(); err != nil {
			return nil, fmt.Errorf("timeline[%d].self: %w", i, err)
		}
		r.Timeline = append(r.Timeline, sec)
	}
	if d.Broker != nil {
		b := stats.Broker(*d.Broker)
		r.Broker = &b
	}
	if d.Baseline != nil {
		if r.Comparison, err = d.Baseline.comparison(); err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
	}
	return r, nil
}

// nonEmpty is s, or nil when it is empty, as Evaluate leaves a list with
// nothing in it.
func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// sets converts named metric sets; an error starts with the set's name.
func sets(m map[string]jsonMetricSet) (map[string]metric.Set, error) {
	out := make(map[string]metric.Set, len(m))
	for name, js := range m {
		s, err := js.set()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// set converts a metric set read from JSON back to the Go type of each
// metric's kind.
func (js jsonMetricSet) set() (metric.Set, error) {
	s := make(metric.Set, len(js))
	for k, v := range js {
		val, err := metricValue(metric.Name(k), v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		s[metric.Name(k)] = val
	}
	return s, nil
}

// metricValue converts one metric value as the decoder gave it (a
// json.Number, a string or nil) to its kind's Go type (see metric.Set).
// null is a rate or fraction that was not finite: NaN. A metric this
// mqplan does not know (written by a newer one) keeps the type its JSON
// form suggests: a duration string, an integer or a float.
func metricValue(name metric.Name, v any) (any, error) {
	m, known := metric.Lookup(string(name))
	switch x := v.(type) {
	case nil:
		if known && m.Kind != metric.Rate && m.Kind != metric.Fraction {
			return nil, fmt.Errorf("null for a %s", m.Kind)
		}
		return math.NaN(), nil
	case string:
		if known && m.Kind != metric.Duration {
			return nil, fmt.Errorf("a string for a %s", m.Kind)
		}
		d, err := time.ParseDuration(x)
		if err != nil {
			return nil, fmt.Errorf("bad duration %q", x)
		}
		return d, nil
	case json.Number:
		switch {
		case known && m.Kind == metric.Duration:
			return nil, fmt.Errorf("a number for a duration (%s)", x)
		case known && m.Kind == metric.Count, !known && !strings.ContainsAny(string(x), ".eE"):
			n, err := strconv.Atoi(string(x))
			if err != nil {
				return nil, fmt.Errorf("bad count %s", x)
			}
			return n, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("bad number %s", x)
		}
		return f, nil
	}
	return nil, fmt.Errorf("unexpected %T value", v)
}

// parseRef reads a metric reference as threshold.Ref.String wrote it:
// "latency.p99", "groups.sub.recv_rate", `groups["my-group"].latency.p99`,
// each possibly under "baseline.".
func parseRef(s string) (threshold.Ref, error) {
	in := s
	var ref threshold.Ref
	if rest, ok := strings.CutPrefix(s, threshold.BaselineRoot+"."); ok {
		ref.Baseline, s = true, rest
	}
	ref.Scope, ref.Metric = threshold.Top, metric.Name(s)
	for _, scope := range []threshold.Scope{threshold.Groups, threshold.Phases} {
		rest, ok := strings.CutPrefix(s, string(scope))
		if !ok || rest == "" || (rest[0] != '.' && rest[0] != '[') {
			continue
		}
		ref.Scope = scope
		if rest[0] == '[' {
			q, err := strconv.QuotedPrefix(rest[1:])
			if err != nil {
				return ref, fmt.Errorf("bad metric reference %q", in)
			}
			ref.Name, _ = strconv.Unquote(q)
			rest = rest[1+len(q):]
			if !strings.HasPrefix(rest, "].") {
				return ref, fmt.Errorf("bad metric reference %q", in)
			}
			rest = rest[2:]
		} else {
			name, m, ok := strings.Cut(rest[1:], ".")
			if !ok || name == "" {
				return ref, fmt.Errorf("bad metric reference %q", in)
			}
			ref.Name, rest = name, m
		}
		ref.Metric = metric.Name(rest)
		break
	}
	if ref.Metric == "" {
		return ref, fmt.Errorf("bad metric reference %q", in)
	}
	return ref, nil
}

// plan converts the plan echo back into a plan. Positions and the
// compiled thresholds were not written and stay zero.
func (jp *jsonPlan) plan() *plans.Plan {
	if jp == nil {
		return nil
	}
	p := &plans.Plan{
		File: jp.File, Name: jp.Name, Description: jp.Description,
		Broker: plans.Broker{
			URLs: jp.Broker.URLs, Protocol: jp.Broker.Protocol,
			ConnectTimeout: time.Duration(jp.Broker.ConnectTimeout),
			TLS:            jp.Broker.TLS, SourceAddresses: jp.Broker.SourceAddresses,
			Metrics: jp.Broker.Metrics,
		},
		Warmup: time.Duration(jp.Warmup), Ramp: time.Duration(jp.Ramp),
		Duration: time.Duration(jp.Duration), Drain: time.Duration(jp.Drain),
		Thresholds: jp.Thresholds,
	}
	for _, g := range jp.Groups {
		pg := plans.Group{
			Name: g.Name, Count: g.Count, Start: g.Start,
			ClientID: g.ClientID, Username: g.Username, Password: g.Password,
			Keepalive: time.Duration(g.Keepalive), CleanStart: g.CleanStart,
			SessionExpiry: time.Duration(g.SessionExpiry), ConnectRate: g.ConnectRate,
			Will: g.Will, Protocol: g.Protocol, Subscribe: g.Subscribe,
		}
		if rc := g.Reconnect; rc != nil {
			pg.Reconnect = &plans.Reconnect{After: time.Duration(rc.After), Max: rc.Max}
		}
		if pub := g.Publish; pub != nil {
			pg.Publish = &plans.Publish{Topic: pub.Topic, QoS: pub.QoS, Size: pub.Size,
				Every: time.Duration(pub.Every), Rate: pub.Rate, Retain: pub.Retain, Count: pub.Count}
		}
		p.Groups = append(p.Groups, pg)
	}
	return p
}
