package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
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
// length: a timeline second is about 600 bytes plus 350 per plan group
// (measured on WriteJSON's output), so a week-long soak of one group
// writes about 580 MB, of two about 790 MB; 1 GiB holds that while keeping
// a wrong file (a device, a disk image) from being read for ever.
// ReadJSON streams, so its memory follows the Result, not this bound.
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
//
// It streams: the document is read key by key, and the timeline (nearly
// all of a long run's file) second by second, each second converted as it
// comes, so that reading takes about the memory of the Result it gives
// rather than the file's bytes, a parsed copy and the Result together.
func readJSON(r io.Reader, limit int64) (*Result, error) {
	s := &jsonStream{src: &countingReader{r: io.LimitReader(r, limit+1)}}
	s.dec = json.NewDecoder(s.src)
	s.dec.UseNumber()
	var d jsonDoc
	timeline, err := s.scan(&d)
	if s.src.n > limit {
		return nil, fmt.Errorf("not an mqplan result: larger than the %s a result may have", sizeText(limit))
	}
	if err != nil {
		if s.version == nil {
			return nil, fmt.Errorf("not an mqplan result: %w", err)
		}
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	// The version is judged before any other problem, so that a
	// document of another version is named as such rather than failing
	// on a key whose shape changed.
	if s.version == nil && !s.hasVerdict && s.findMaxKeys == 2 {
		return nil, errors.New(`an mqplan find-max search (knob and trials), not a run's result: mqplan report and compare read results of mqplan run; the search's table and HTML come from find-max --out table=FILE --out html=FILE`)
	}
	if s.version == nil || !s.hasVerdict {
		return nil, errors.New(`not an mqplan result: no "version" or "verdict" key (write one with mqplan run --out json=FILE)`)
	}
	var version int
	if err := json.Unmarshal(s.version, &version); err != nil {
		v := string(s.version)
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
	if s.err != nil {
		return nil, fmt.Errorf("reading the result: %w", s.err)
	}
	res, err := d.result()
	if err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	res.Timeline = timeline
	if res.Comparison != nil {
		// This run's side of its comparison with its baseline is this
		// result itself, not what the file says of it.
		res.Comparison.B = comparedRun(res, thisRun)
	}
	if err := checkResult(res); err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	if got := res.Verdict(); got != d.Verdict {
		return nil, fmt.Errorf("reading the result: its verdict %q disagrees with its thresholds and completion, which give %q: the file was edited", d.Verdict, got)
	}
	return res, nil
}

// jsonStream reads a result document from a decoder, keeping what it
// needs to word errors with their line.
type jsonStream struct {
	src *countingReader
	dec *json.Decoder
	// version is the raw "version" value, nil until it is read;
	// findMaxKeys counts the keys only a find-max search's JSON has
	// ("knob", "trials"), to name such a file when it is refused.
	findMaxKeys int
	// hasVerdict says "verdict" was there.
	version    json.RawMessage
	hasVerdict bool
	// err is the first problem with a value that was read whole (a type
	// or a figure), kept until the version is known: a document of
	// another version is named as such first.
	err error
	// names interns the timeline's group names: a long timeline repeats
	// the same few.
	names map[string]string
}

// countingReader counts the bytes and newlines read through it.
type countingReader struct {
	r        io.Reader
	n, lines int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.lines += int64(bytes.Count(p[:n], []byte("\n")))
	return n, err
}

// lineAt is the line of offset off of the stream, when off is at or
// after what the decoder has consumed (the start of its buffered bytes).
func (s *jsonStream) lineAt(off int64) int64 {
	buf, _ := io.ReadAll(s.dec.Buffered())
	rel := off - s.dec.InputOffset()
	rel = max(0, min(rel, int64(len(buf))))
	return 1 + s.src.lines - int64(bytes.Count(buf[rel:], []byte("\n")))
}

// syntax words a decoding error of the stream itself with its line.
// The offset a Decoder gives is the stream's for an error in Token's own
// tokens (inValue false), but counts only the bytes its values took for
// one in a value (Decode): that value, still buffered from its start, is
// scanned again on its own to find the offset within it.
func (s *jsonStream) syntax(err error, inValue bool) error {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("line %d: unexpected end of JSON input", s.lineAt(s.src.n))
	case errors.As(err, &syn):
		off := syn.Offset
		if inValue {
			off = s.dec.InputOffset()
			buf, _ := io.ReadAll(s.dec.Buffered())
			var raw json.RawMessage
			var again *json.SyntaxError
			if errors.As(json.NewDecoder(bytes.NewReader(buf)).Decode(&raw), &again) {
				off += again.Offset
			}
		}
		return fmt.Errorf("line %d: %v", s.lineAt(off), err)
	}
	return err
}

// decodeRaw reads the next value whole and the line it starts on.
func (s *jsonStream) decodeRaw() (json.RawMessage, int64, error) {
	var raw json.RawMessage
	if err := s.dec.Decode(&raw); err != nil {
		return nil, 0, s.syntax(err, true)
	}
	return raw, s.lineAt(s.dec.InputOffset()) - int64(bytes.Count(raw, []byte("\n"))), nil
}

// into decodes a value read whole into v, as the document's decoder
// would (numbers kept as json.Number); a problem is kept in s.err with
// its line, the stream going on.
func (s *jsonStream) into(raw json.RawMessage, line int64, v any, path string) {
	if s.err != nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Offset >= 0 && typ.Offset <= int64(len(raw)) {
			line += int64(bytes.Count(raw[:typ.Offset], []byte("\n")))
		}
		s.err = fmt.Errorf("line %d: %s: %w", line, path, err)
	}
}

// scan reads the document: its keys into d (the timeline excepted), the
// timeline converted second by second. It returns at the first error of
// the stream's syntax; a problem with one value is kept in s.err.
func (s *jsonStream) scan(d *jsonDoc) ([]stats.Second, error) {
	tok, err := s.dec.Token()
	if err != nil {
		return nil, s.syntax(err, false)
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("line %d: json: cannot unmarshal %s into an mqplan result", s.lineAt(s.dec.InputOffset()), jsonKind(tok))
	}
	fields := docFields(d)
	var timeline []stats.Second
	for s.dec.More() {
		tok, err := s.dec.Token()
		if err != nil {
			return nil, s.syntax(err, false)
		}
		key, _ := tok.(string)
		if key == "timeline" {
			if timeline, err = s.timeline(); err != nil {
				return nil, err
			}
			continue
		}
		raw, line, err := s.decodeRaw()
		if err != nil {
			return nil, err
		}
		switch key {
		case "version":
			s.version = raw
			continue
		case "verdict":
			s.hasVerdict = true
		case "knob", "trials":
			s.findMaxKeys++
		}
		if f := fieldFor(fields, key); f != nil {
			s.into(raw, line, f, key)
		}
	}
	if _, err := s.dec.Token(); err != nil {
		return nil, s.syntax(err, false)
	}
	// Nothing but space may follow the document.
	rest := bufio.NewReader(io.MultiReader(s.dec.Buffered(), s.src))
	for {
		c, err := rest.ReadByte()
		if err != nil {
			break
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil, fmt.Errorf("invalid character %q after top-level value", c)
		}
	}
	return timeline, nil
}

// timeline reads the timeline's seconds one at a time.
func (s *jsonStream) timeline() ([]stats.Second, error) {
	tok, err := s.dec.Token()
	if err != nil {
		return nil, s.syntax(err, false)
	}
	if tok == nil {
		return nil, nil // null: no timeline
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("line %d: timeline: json: cannot unmarshal %s into a list of seconds", s.lineAt(s.dec.InputOffset()), jsonKind(tok))
	}
	out := []stats.Second{}
	for i := 0; s.dec.More(); i++ {
		raw, line, err := s.decodeRaw()
		if err != nil {
			return nil, err
		}
		if s.err != nil {
			continue // reach the version, which is judged first
		}
		var js jsonSecond
		path := "timeline[" + strconv.Itoa(i) + "]"
		if s.into(raw, line, &js, path); s.err != nil {
			continue
		}
		sec, err := js.second(s.intern)
		if err != nil {
			s.err = fmt.Errorf("line %d: %s%w", line, path, err)
			continue
		}
		out = append(out, sec)
	}
	if _, err := s.dec.Token(); err != nil {
		return nil, s.syntax(err, false)
	}
	return out, nil
}

// intern returns the one copy of a group name.
func (s *jsonStream) intern(name string) string {
	if v, ok := s.names[name]; ok {
		return v
	}
	if s.names == nil {
		s.names = map[string]string{}
	}
	if len(s.names) < 1<<16 {
		s.names[name] = name
	}
	return name
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

// jsonKind names what a token starts, as encoding/json's errors do.
func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return "number"
}

// docFields maps the document's keys to d's fields, by their json tags.
func docFields(d *jsonDoc) map[string]any {
	v := reflect.ValueOf(d).Elem()
	t := v.Type()
	out := make(map[string]any, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = v.Field(i).Addr().Interface()
		}
	}
	return out
}

// fieldFor finds a key's field as encoding/json does: the exact name,
// else one that differs only in case.
func fieldFor(fields map[string]any, key string) any {
	if f, ok := fields[key]; ok {
		return f
	}
	for name, f := range fields {
		if strings.EqualFold(name, key) {
			return f
		}
	}
	return nil
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
		MqplanVersion: d.MqplanVersion,
		Label:         d.Label,
		Hostname:      d.Hostname,
		CommandLine:   d.CommandLine,
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
	dist, err := d.Disturbance.disturbance()
	if err != nil {
		return nil, err
	}
	r.Disturbance = dist
	// The plan's own warnings come first in the document; the Result
	// holds the run's only (see headerWarnings).
	ws := d.Warnings
	if r.Plan != nil && r.Plan.Broker.TLS != nil && r.Plan.Broker.TLS.InsecureSkipVerify && len(ws) > 0 && ws[0] == insecureWarning {
		ws = ws[1:]
	}
	r.Warnings = nonEmpty(ws)

	for i, t := range d.Thresholds {
		o := ThresholdOutcome{Expr: t.Expr, Builtin: t.Builtin, Pass: t.Pass, Reason: t.Reason, Late: t.Late, NotJudged: t.NotJudged}
		if t.NotJudged != "" && (t.Pass || t.Builtin) {
			return nil, fmt.Errorf("thresholds[%d]: not_judged is only for a failed threshold of the plan's", i)
		}
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
	r.Histograms = histogramsOf(d.Histograms)
	for _, dist := range d.Distributions {
		rd := Distribution{Name: dist.Name, Group: dist.Group, Samples: dist.Samples}
		for _, pt := range dist.Points {
			rd.Points = append(rd.Points, PercentilePoint{Percentile: pt.Percentile, Value: time.Duration(pt.Value)})
		}
		r.Distributions = append(r.Distributions, rd)
	}
	if r.Measured.Top, err = d.Metrics.Top.set(); err != nil {
		return nil, fmt.Errorf("metrics.top: %w", err)
	}
	if r.Measured.Groups, err = sets(d.Metrics.Groups); err != nil {
		return nil, fmt.Errorf("metrics.groups.%w", err)
	}
	if r.Measured.Phases, err = sets(d.Metrics.Phases); err != nil {
		return nil, fmt.Errorf("metrics.phases.%w", err)
	}
	if len(d.Metrics.Stages) > 0 {
		if r.Measured.Stages, err = sets(d.Metrics.Stages); err != nil {
			return nil, fmt.Errorf("metrics.stages.%w", err)
		}
	}
	for i, s := range d.Timeline {
		sec, err := s.second(func(s string) string { return s })
		if err != nil {
			return nil, fmt.Errorf("timeline[%d]%w", i, err)
		}
		r.Timeline = append(r.Timeline, sec)
	}
	if d.Broker != nil {
		b := stats.Broker(*d.Broker)
		r.Broker = &b
	}
	if bc := d.BrokerCounters; bc != nil {
		if r.CountersStart, err = bc.Start.counters(); err != nil {
			return nil, fmt.Errorf("broker_counters.start: %w", err)
		}
		if r.CountersEnd, err = bc.End.counters(); err != nil {
			return nil, fmt.Errorf("broker_counters.end: %w", err)
		}
	}
	r.Clock = d.Clock.clock()
	if d.Baseline != nil {
		if r.Comparison, err = d.Baseline.comparison(); err != nil {
			return nil, fmt.Errorf("baseline%w", err)
		}
	}
	return r, nil
}

// second converts one second of the timeline back; intern gives the one
// copy of a group name. An error starts with what follows the second's
// path: ": unknown phase", ".broker: ...".
func (s *jsonSecond) second(intern func(string) string) (stats.Second, error) {
	ph, ok := phase.Parse(s.Phase)
	if !ok {
		return stats.Second{}, fmt.Errorf(": unknown phase %q", s.Phase)
	}
	sec := stats.Second{At: time.Duration(s.At), Phase: ph, Connected: s.Connected,
		Lost: s.Lost, Sent: s.Sent, Received: s.Received, Errors: s.Errors, Disconnects: s.Disconnects,
		P50: s.P50.duration(), P99: s.P99.duration(), Max: s.Max.duration(), LagMax: time.Duration(s.LagMax)}
	if len(s.Groups) > 0 {
		sec.Groups = make([]stats.GroupSecond, 0, len(s.Groups))
	}
	for _, g := range s.Groups {
		sec.Groups = append(sec.Groups, stats.GroupSecond{Group: intern(g.Group), Connected: g.Connected, Lost: g.Lost,
			Sent: g.Sent, Received: g.Received, Errors: g.Errors, Disconnects: g.Disconnects,
			Acked: g.Acked, Duplicates: g.Duplicates, P50: g.P50.duration(), P99: g.P99.duration(), Max: g.Max.duration(), LagMax: time.Duration(g.LagMax)})
	}
	var err error
	if sec.Broker, err = s.Broker.sample(); err != nil {
		return stats.Second{}, fmt.Errorf(".broker: %w", err)
	}
	if sec.Self, err = s.Self.sample(); err != nil {
		return stats.Second{}, fmt.Errorf(".self: %w", err)
	}
	if sec.Gen, err = s.Gen.sample(); err != nil {
		return stats.Second{}, fmt.Errorf(".gen: %w", err)
	}
	if sec.Counters, err = s.Counters.counters(); err != nil {
		return stats.Second{}, fmt.Errorf(".counters: %w", err)
	}
	return sec, nil
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
	for _, scope := range []threshold.Scope{threshold.Groups, threshold.Phases, threshold.Stages} {
		rest, ok := strings.CutPrefix(s, string(scope))
		if !ok || rest == "" || (rest[0] != '.' && rest[0] != '[') {
			continue
		}
		ref.Scope = scope
		if n, tail, ok := stageIndexRef(scope, rest); ok {
			// stages[2].p99: an unnamed stage, named by its index.
			ref.Name, rest = n, tail
		} else if rest[0] == '[' {
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
		Duration: time.Duration(jp.Duration), Drain: time.Duration(jp.Drain), DrainQuiet: time.Duration(jp.DrainQuiet),
		Thresholds: jp.Thresholds, Seed: jp.Seed, Sharding: jp.Sharding, Disturbance: jp.Disturbance,
	}
	p.Stages = stagesOf(jp.Stages)
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
		if ch := g.Churn; ch != nil {
			pg.Churn = &plans.Churn{Lifetime: time.Duration(ch.Lifetime), LifetimeMax: time.Duration(ch.LifetimeMax), Rate: ch.Rate, Away: time.Duration(ch.Away)}
		}
		if pub := g.Publish; pub != nil {
			pg.Publish = &plans.Publish{Topic: pub.Topic, QoS: pub.QoS, Size: pub.Size,
				Every: time.Duration(pub.Every), Rate: pub.Rate, Arrival: pub.Arrival, Max: pub.Max, Inflight: pub.Inflight, Retain: pub.Retain, Count: pub.Count,
				ResponseTopic: pub.ResponseTopic, ResponseTimeout: time.Duration(pub.ResponseTimeout),
				Payload: pub.Payload, Header: pub.Header, Sizes: pub.Sizes}
			if b := pub.Burst; b != nil {
				pg.Publish.Burst = &plans.Burst{Every: time.Duration(b.Every), Messages: b.Messages}
			}
			if d := pub.StartDelay; d != nil {
				pg.Publish.StartDelay = &plans.StartDelay{Min: time.Duration(d.Min), Max: time.Duration(d.Max)}
			}
			pg.Publish.Stages = stagesOf(pub.Stages)
		}
		pg.Respond = g.Respond
		p.Groups = append(p.Groups, pg)
	}
	return p
}
