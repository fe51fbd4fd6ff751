package report

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"github.com/mqplan/mqplan/stats"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/internal/outfile"
	"github.com/mqplan/mqplan/plans"
)

// JSONVersion is the version of the JSON report's shape. It changes only
// when a key is removed or changes meaning; new keys may appear without it.
const JSONVersion = 1

// jsonDoc is the JSON report's top level; see WriteJSON for its shape.
type jsonDoc struct {
	Version      int             `json:"version"`
	Verdict      string          `json:"verdict"`
	Summary      string          `json:"summary"`
	Passed       bool            `json:"passed"`
	Complete     bool            `json:"complete"`
	Interrupted  bool            `json:"interrupted"`
	Incomplete   string          `json:"incomplete"`
	Plan         *plans.Plan     `json:"plan"`
	BrokerURL    string          `json:"broker_url"`
	Started      time.Time       `json:"started"`
	Elapsed      time.Duration   `json:"elapsed"`
	Warnings     []string        `json:"warnings"`
	Thresholds   []jsonThreshold `json:"thresholds"`
	Phases       []jsonPhase     `json:"phases"`
	Groups       []jsonGroup     `json:"groups"`
	Latency      []jsonLatency   `json:"latency"`
	Metrics      jsonMetrics     `json:"metrics"`
	Timeline     []jsonSecond    `json:"timeline"`
	Broker       *jsonBroker     `json:"broker"`
	ErrorSamples []string        `json:"error_samples"`
	// Unsent, InFlightAtEnd and DrainQuiet: see Result.
	Unsent        int64         `json:"unsent"`
	InFlightAtEnd int64         `json:"in_flight_at_end"`
	DrainQuiet    time.Duration `json:"drain_quiet"`
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
}

type jsonValue struct {
	Metric  string `json:"metric"`
	Value   any    `json:"value"`
	Missing bool   `json:"missing"`
}

type jsonPhase struct {
	Name     string        `json:"name"`
	Start    time.Duration `json:"start"`
	End      time.Duration `json:"end"`
	Duration time.Duration `json:"duration"`
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
	Name    string         `json:"name"`
	Samples int64          `json:"samples"`
	Min     *time.Duration `json:"min"`
	Mean    *time.Duration `json:"mean"`
	P50     *time.Duration `json:"p50"`
	P90     *time.Duration `json:"p90"`
	P99     *time.Duration `json:"p99"`
	P999    *time.Duration `json:"p999"`
	Max     *time.Duration `json:"max"`
}

type jsonMetrics struct {
	Top    plans.MetricSet            `json:"top"`
	Groups map[string]plans.MetricSet `json:"groups"`
	Phases map[string]plans.MetricSet `json:"phases"`
}

type jsonSecond struct {
	At          time.Duration `json:"at"`
	Phase       string        `json:"phase"`
	Connected   int           `json:"connected"`
	Lost        int           `json:"lost"`
	Sent        int64         `json:"sent"`
	Received    int64         `json:"received"`
	Errors      int64         `json:"errors"`
	Disconnects int64         `json:"disconnects"`
	// P50, P99 and Max are null in a second without deliveries.
	P50    *time.Duration `json:"p50"`
	P99    *time.Duration `json:"p99"`
	Max    *time.Duration `json:"max"`
	LagMax time.Duration  `json:"lag_max"`
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
		Verdict:       r.Verdict(),
		Summary:       r.Summary(),
		Passed:        r.Passed(),
		Complete:      r.Complete(),
		Interrupted:   r.Interrupted,
		Incomplete:    r.Incomplete,
		Plan:          redactPlan(r.Plan),
		BrokerURL:     redactURL(r.BrokerURL),
		Started:       r.Started,
		Elapsed:       r.Elapsed,
		Warnings:      r.headerWarnings(),
		ErrorSamples:  r.ErrorSamples,
		Unsent:        r.Unsent,
		InFlightAtEnd: r.InFlightAtEnd,
		DrainQuiet:    r.DrainQuiet,
		Metrics:       jsonMetrics{Top: r.Measured.Top, Groups: r.Measured.Groups, Phases: r.Measured.Phases},
	}
	for _, t := range r.Thresholds {
		jt := jsonThreshold{Expr: t.Expr, Builtin: t.Builtin, Line: t.Pos.Line, Column: t.Pos.Col, Pass: t.Pass, Reason: t.Reason}
		for _, v := range t.Values {
			jv := jsonValue{Metric: v.Ref.String(), Missing: v.Missing}
			if !v.Missing {
				jv.Value = v.Value
			}
			jt.Values = append(jt.Values, jv)
		}
		d.Thresholds = append(d.Thresholds, jt)
	}
	for _, p := range r.Phases {
		d.Phases = append(d.Phases, jsonPhase{Name: p.Phase.String(), Start: p.Start, End: p.End, Duration: p.Duration()})
	}
	for _, g := range r.Groups {
		d.Groups = append(d.Groups, jsonGroup{Name: g.Name, Publishes: g.Publishes, Subscribes: g.Subscribes,
			Clients: g.Clients, Connected: g.Connected, ConnectedAtEnd: g.ConnectedAtEnd, Lost: g.Lost, Late: g.Late})
	}
	for _, l := range r.Latency {
		jl := jsonLatency{Name: l.Name, Samples: l.Samples}
		if l.Samples > 0 {
			jl.Min, jl.Mean, jl.P50, jl.P90, jl.P99, jl.P999, jl.Max = &l.Min, &l.Mean, &l.P50, &l.P90, &l.P99, &l.P999, &l.Max
		}
		d.Latency = append(d.Latency, jl)
	}
	for _, s := range r.Timeline {
		js := jsonSecond{At: s.At, Phase: s.Phase.String(), Connected: s.Connected, Lost: s.Lost, Sent: s.Sent, Received: s.Received,
			Errors: s.Errors, Disconnects: s.Disconnects, LagMax: s.LagMax}
		if s.Received > 0 {
			js.P50, js.P99, js.Max = &s.P50, &s.P99, &s.Max
		}
		d.Timeline = append(d.Timeline, js)
	}
	if b := r.Broker; b != nil {
		jb := jsonBroker(*b)
		d.Broker = &jb
	}
	return d
}

// redactPlan returns p with credentials in its broker URLs hidden (a copy:
// the plan may be used again). Passwords need nothing: plans.Secret
// marshals masked.
func redactPlan(p *plans.Plan) *plans.Plan {
	if p == nil {
		return nil
	}
	cp := *p
	cp.Broker.URLs = make([]string, len(p.Broker.URLs))
	for i, u := range p.Broker.URLs {
		cp.Broker.URLs[i] = redactURL(u)
	}
	return &cp
}

// A compile-time check that the JSON mirror of BrokerStats still has the
// same fields: the conversion fails to compile when they drift apart, so a
// new runner field cannot silently go missing from the report. (jsonSecond
// differs in its latency fields' types; TestJSONSecondMirrorsSecond checks it.)
var _ = jsonBroker(stats.Broker{})

// MarshalJSON gives a Result the report's JSON shape, so that json.Marshal
// on a Result agrees with WriteJSON.
func (r *Result) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := encodeJSON(&b, reflect.ValueOf(r.doc()), ""); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
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
//	metrics      {top: {...}, groups: {name: {...}}, phases: {name: {...}}},
//	             the sets thresholds read, keyed by canonical metric name
//	timeline     per-second figures
//	broker       the embedded broker's counters, or null
//	error_samples
func WriteJSON(w io.Writer, r *Result) error {
	var b bytes.Buffer
	if err := encodeJSON(&b, reflect.ValueOf(r.doc()), ""); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
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

var durationType = reflect.TypeFor[time.Duration]()

// as returns v as an I when its type, or a pointer to it (v addressable),
// implements I, as encoding/json does. An interface value is never taken
// as itself: its dynamic value is examined once unwrapped.
func as[I any](v reflect.Value) (I, bool) {
	var zero I
	it := reflect.TypeFor[I]()
	if v.Kind() == reflect.Interface {
		return zero, false
	}
	if v.Type().Implements(it) {
		i, ok := v.Interface().(I)
		return i, ok
	}
	if v.CanAddr() && reflect.PointerTo(v.Type()).Implements(it) {
		i, ok := v.Addr().Interface().(I)
		return i, ok
	}
	return zero, false
}

// encodeJSON writes v as indented JSON. It follows encoding/json's rules
// (json tags, omitempty, "-", Marshaler and TextMarshaler, sorted map keys)
// with three differences that the report needs:
//
//   - a time.Duration is written as its String(), wherever it appears
//     (plan fields, metric sets' `any` values, timeline), so every duration
//     in the document has one form;
//   - NaN and ±Inf are written as null instead of failing the whole report;
//   - nil slices are written as [] so a list's type never changes between
//     runs, and HTML characters are not escaped (descriptions stay legible).
//
// Anonymous struct fields are not flattened; no type in the report has one.
func encodeJSON(b *bytes.Buffer, v reflect.Value, indent string) error {
	if !v.IsValid() {
		b.WriteString("null")
		return nil
	}
	t := v.Type()
	if t == durationType {
		return writeString(b, time.Duration(v.Int()).String())
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
	}
	if m, ok := as[json.Marshaler](v); ok {
		out, err := m.MarshalJSON()
		if err != nil {
			return err
		}
		var c bytes.Buffer
		if err := json.Indent(&c, out, indent, "  "); err != nil {
			return err
		}
		b.Write(c.Bytes())
		return nil
	}
	if m, ok := as[encoding.TextMarshaler](v); ok {
		out, err := m.MarshalText()
		if err != nil {
			return err
		}
		return writeString(b, string(out))
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return encodeJSON(b, v.Elem(), indent)
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b.WriteString("null")
			return nil
		}
		out, err := json.Marshal(f)
		if err != nil {
			return err
		}
		b.Write(out)
	case reflect.String:
		return writeString(b, v.String())
	case reflect.Slice, reflect.Array:
		return encodeList(b, v, indent)
	case reflect.Map:
		return encodeMap(b, v, indent)
	case reflect.Struct:
		return encodeStruct(b, v, indent)
	default:
		return fmt.Errorf("report: cannot encode %s as JSON", t)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) error {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(out.Bytes(), []byte("\n")))
	return nil
}

func encodeList(b *bytes.Buffer, v reflect.Value, indent string) error {
	if v.Len() == 0 {
		b.WriteString("[]")
		return nil
	}
	inner := indent + "  "
	b.WriteString("[\n")
	for i := 0; i < v.Len(); i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(inner)
		if err := encodeJSON(b, v.Index(i), inner); err != nil {
			return err
		}
	}
	b.WriteString("\n" + indent + "]")
	return nil
}

// member is one key of a JSON object about to be written.
type member struct {
	key string
	val reflect.Value
}

func encodeObject(b *bytes.Buffer, ms []member, indent string) error {
	if len(ms) == 0 {
		b.WriteString("{}")
		return nil
	}
	inner := indent + "  "
	b.WriteString("{\n")
	for i, m := range ms {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(inner)
		if err := writeString(b, m.key); err != nil {
			return err
		}
		b.WriteString(": ")
		if err := encodeJSON(b, m.val, inner); err != nil {
			return err
		}
	}
	b.WriteString("\n" + indent + "}")
	return nil
}

func encodeMap(b *bytes.Buffer, v reflect.Value, indent string) error {
	if v.IsNil() {
		b.WriteString("{}")
		return nil
	}
	ms := make([]member, 0, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		ms = append(ms, member{key: fmt.Sprint(iter.Key().Interface()), val: iter.Value()})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].key < ms[j].key })
	return encodeObject(b, ms, indent)
}

func encodeStruct(b *bytes.Buffer, v reflect.Value, indent string) error {
	t := v.Type()
	var ms []member
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fv := v.Field(i)
		if hasOpt(opts, "omitempty") && isEmpty(fv) {
			continue
		}
		if hasOpt(opts, "omitzero") && fv.IsZero() {
			continue
		}
		ms = append(ms, member{key: name, val: fv})
	}
	return encodeObject(b, ms, indent)
}

func hasOpt(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// isEmpty is encoding/json's notion of an empty value for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
