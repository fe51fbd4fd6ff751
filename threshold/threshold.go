// Package threshold is mqplan's threshold language: it compiles a pass
// condition such as `p99 < 10ms and groups.sub.loss_rate == 0` against the
// metric catalogue (package metric) and the scopes a plan has, and judges
// it on what a run measured.
//
// The language is a small, checked subset of expr-lang
// (https://expr-lang.org): metric names, numbers, Go duration literals
// (10ms, 1.5s, 1m30s), size literals (512B, 10KB = 10×1000 bytes, 2GiB =
// 2×1024³ bytes, read as a plan's payload size is), comparisons (== != < <= > >=), and or not (also
// && || !), arithmetic (+ - * / % **), parentheses, the conditional
// `a ? b : c`, and duration("10ms"). Everything else expr offers
// (variables, lists, maps, predicates, other functions, $env) is refused
// at compile time, because each would let an expression read something
// that Reads does not list, or fail only at run time, after the load test
// has been paid for.
//
// Compiling goes by stage, a file each: the literal rewriter
// (durations.go) makes 10ms and 2GiB something expr parses; the checker
// (check.go) walks expr's syntax tree, resolves names, refuses a
// whole-run metric (metric.Metric.WholeRun) under a group or phase, and
// types every operand: a duration goes with durations, a size with byte
// metrics (metric.Bytes) and plain numbers, never with counts or rates
// (a byte metric without a size literal in sight mixes with counts, as it
// did before sizes: legacyBytes);
// compile.go holds the compile-time scopes and hands the checked text to
// expr; errors.go words what went wrong, at a rune offset within the
// expression; names.go spells names and suggests the one meant. This file
// holds the compiled form and its evaluation.
//
// The package owns the language only. It does not know plans: the group
// and phase names a threshold may scope a metric to come in as Scopes, and
// an error's position is an offset in the expression, which the caller
// places in its file. It does not compute metric values (the report does)
// and it imports nothing of mqplan but metric.
package threshold

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/mqplan/mqplan/metric"
)

// Threshold is one compiled pass condition. It is immutable once
// compiled; Eval may be called concurrently.
type Threshold struct {
	// Reads lists every metric the expression reads, in order of first use,
	// deduplicated.
	Reads []Ref

	expr    string
	program *vm.Program
	// arith is the text of each division or power of the expression, for
	// the reason of a threshold that met Inf or NaN (see finiteFunc).
	arith []string
	// bounds are the comparisons of a metric with a number (Bounds).
	bounds []Bound
}

// String returns the expression as the user wrote it.
func (t *Threshold) String() string { return t.expr }

// Scope is where a threshold reads a metric: the measured window as a
// whole, one group or one phase.
type Scope string

// The scopes, spelled as a threshold spells them.
const (
	// Top is the measured window: latency.p99.
	Top Scope = ""
	// Groups is one plan group: groups.sub.latency.p99.
	Groups Scope = "groups"
	// Phases is one phase of the run: phases.steady.latency.p99.
	Phases Scope = "phases"
)

// Ref names one metric in one scope, as a threshold reads it.
type Ref struct {
	// Baseline says the metric is read from the baseline run
	// (baseline.p99, baseline.groups.sub.recv_rate) rather than this one.
	Baseline bool
	// Scope is Top, Groups, Phases or Stages.
	Scope Scope
	// Name is the group, phase or stage name when Scope is not Top (a
	// stage's name even when the threshold wrote its index).
	Name string
	// Metric is the canonical metric name (aliases such as "p99" are
	// resolved).
	Metric metric.Name
}

// String renders the reference in threshold syntax with the canonical
// metric name: "latency.p99", "groups.sub.recv_rate", and
// `groups["my-group"].latency.p99` for names that are not identifiers, so
// that what a report prints can be pasted back into a plan.
func (r Ref) String() string {
	prefix := ""
	if r.Baseline {
		prefix = BaselineRoot + "."
	}
	if r.Scope == Top {
		return prefix + string(r.Metric)
	}
	return prefix + string(r.Scope) + scopeMember(r.Scope, r.Name) + "." + string(r.Metric)
}

// BaselineRoot is the name under which a threshold reads a baseline run's
// figures: `p99 <= baseline.p99 * 1.10`. Below it, the scopes are this
// run's: baseline.groups.sub.recv_rate, baseline.phases.steady.p99.
const BaselineRoot = "baseline"

// Measured is everything a run measured, in the three scopes thresholds
// can name: the top level (the steady window), each group and each phase.
type Measured struct {
	// Top covers the measured window: the steady phase, with the
	// deliveries of its messages that arrive during drain.
	Top metric.Set
	// Groups is keyed by group name; a group without a set had no samples.
	Groups map[string]metric.Set
	// Phases is keyed by phase name; a phase without a set had no samples.
	Phases map[string]metric.Set
	// Stages is keyed by stage name (an unnamed stage's is its index):
	// the messages intended within each stage's window.
	Stages map[string]metric.Set
	// Baseline holds a baseline run's figures in the same scopes (mqplan
	// run --baseline FILE); nil when none was given, and then every
	// threshold that reads baseline.* fails, saying so.
	Baseline *Measured
}

// Result is the verdict of one threshold on one run.
type Result struct {
	// Pass is true only when every metric read had samples and the
	// expression held.
	Pass bool
	// Values has one entry per Reads element: the measured value, or Missing.
	Values []Value
	// Reason is empty on pass; otherwise e.g. "no samples for groups.sub.p99"
	// or "false".
	Reason string
}

// Value is one metric a threshold read, with what was measured.
type Value struct {
	Ref Ref
	// Value is the measured value in its kind's Go type (int, float64 or
	// time.Duration); nil when Missing.
	Value any
	// Missing means the metric had no samples in its scope.
	Missing bool
}

// Eval judges the threshold on measured values. A metric the expression
// reads that has no samples fails the threshold (k6 passes such thresholds
// silently; a load test that measured nothing must not be green). Eval never
// panics, whatever the sets hold: a value of the wrong type fails the
// threshold with a reason.
func (t *Threshold) Eval(m Measured) Result {
	if t == nil || t.program == nil {
		return Result{Reason: "threshold was not compiled"}
	}
	res := Result{Values: make([]Value, len(t.Reads))}
	env := map[string]any{}
	var missing []string
	var bad string
	noBaseline := false
	for i, ref := range t.Reads {
		mv := Value{Ref: ref}
		from := &m
		if ref.Baseline {
			from = m.Baseline
		}
		if from == nil {
			noBaseline = true
			mv.Missing = true
			res.Values[i] = mv
			continue
		}
		var set metric.Set
		switch ref.Scope {
		case Top:
			set = from.Top
		case Groups:
			set = from.Groups[ref.Name]
		case Phases:
			set = from.Phases[ref.Name]
		case Stages:
			set = from.Stages[ref.Name]
		}
		raw, ok := set[ref.Metric]
		md, known := metric.Lookup(string(ref.Metric))
		switch {
		case !known:
			// Only a hand-built Threshold can get here; refuse rather than guess.
			if bad == "" {
				bad = fmt.Sprintf("unknown metric %q", ref.Metric)
			}
		case !ok || raw == nil:
			mv.Missing = true
			missing = append(missing, ref.String())
		default:
			v, err := conform(md.Kind, raw)
			if err != nil {
				mv.Value = raw
				if bad == "" {
					bad = ref.String() + ": " + err.Error()
				}
				break
			}
			if v == nil { // NaN: a ratio of nothing is no sample
				mv.Missing = true
				missing = append(missing, ref.String())
				break
			}
			mv.Value = v
			put(env, ref, v)
		}
		res.Values[i] = mv
	}
	if noBaseline {
		res.Reason = "no baseline to compare with (mqplan run --baseline FILE)"
		return res
	}
	if len(missing) > 0 {
		res.Reason = "no samples for " + strings.Join(missing, ", ")
		return res
	}
	if bad != "" {
		res.Reason = bad
		return res
	}
	out, err := expr.Run(t.program, env)
	if nf := (*nonFinite)(nil); errors.As(err, &nf) {
		if nf.index == -1 {
			res.Reason = fmt.Sprintf("a duration multiplied by a number is %v ns, beyond any duration: a threshold that is not a finite number fails", nf.value)
			return res
		}
		what := "a division or power"
		if nf.index >= 0 && nf.index < len(t.arith) {
			what = t.arith[nf.index]
		}
		res.Reason = fmt.Sprintf("%s is %v, not a finite number (a division by zero?): a threshold that is not a finite number fails", what, nf.value)
		return res
	}
	if err != nil {
		res.Reason = cleanMessage(errorMessage(err))
		return res
	}
	pass, ok := out.(bool)
	if !ok {
		res.Reason = fmt.Sprintf("the expression gave %T, not true or false", out)
		return res
	}
	res.Pass = pass
	if !pass {
		res.Reason = "false"
	}
	return res
}

// conform converts a measured value to the Go type its kind promises, so
// that the compiled program (type-checked against those types) never meets
// another. A NaN rate gives (nil, nil): it is a ratio of nothing, treated as
// no samples.
func conform(kind metric.Kind, v any) (any, error) {
	rv := reflect.ValueOf(v)
	switch kind {
	case metric.Count:
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if _, isDur := v.(time.Duration); !isDur {
				return int(rv.Int()), nil
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			if u := rv.Uint(); u <= math.MaxInt {
				return int(u), nil
			}
			return nil, fmt.Errorf("count %d is too large", rv.Uint())
		case reflect.Float32, reflect.Float64:
			if f := rv.Float(); f == math.Trunc(f) && math.Abs(f) < 1<<62 {
				return int(f), nil
			}
		}
	case metric.Rate, metric.Fraction:
		switch rv.Kind() {
		case reflect.Float32, reflect.Float64:
			f := rv.Float()
			if math.IsNaN(f) {
				return nil, nil
			}
			if math.IsInf(f, 0) {
				// +Inf > 100 would hold: an infinite rate is a broken
				// measurement, which fails rather than passes.
				return nil, fmt.Errorf("measured %v, not a finite number", f)
			}
			return f, nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if _, isDur := v.(time.Duration); !isDur {
				return float64(rv.Int()), nil
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			return float64(rv.Uint()), nil
		}
	case metric.Duration:
		if d, ok := v.(time.Duration); ok {
			return d, nil
		}
	}
	return nil, fmt.Errorf("measured a %T, which is not a %s", v, kind)
}

// put stores a value in the evaluation env under every spelling the
// program may use: the canonical path (latency → p99) and, for a latency
// percentile, its alias (p99), inside groups[name] or phases[name] when
// scoped. The env mirrors the compile-time types.Map shape exactly.
func put(env map[string]any, ref Ref, v any) {
	m := env
	if ref.Baseline {
		m = sub(m, BaselineRoot)
	}
	if ref.Scope != Top {
		m = sub(sub(m, string(ref.Scope)), ref.Name)
	}
	parts := strings.Split(string(ref.Metric), ".")
	at := m
	for _, p := range parts[:len(parts)-1] {
		at = sub(at, p)
	}
	at[parts[len(parts)-1]] = v
	if alias, ok := metric.Alias(ref.Metric); ok {
		m[alias] = v
	}
}

// sub returns m[key] as a map, creating it when absent.
func sub(m map[string]any, key string) map[string]any {
	if s, ok := m[key].(map[string]any); ok {
		return s
	}
	s := map[string]any{}
	m[key] = s
	return s
}

// finiteFunc is the function wrapped around every division and power of
// a threshold, so that a result that is not a finite number (sent / lost
// with lost == 0 is +Inf; 0 / 0 is NaN) stops the evaluation instead of
// comparing: +Inf > 5 holds and !(NaN < 5) holds, and a verdict resting on
// either would pass a run that proved nothing. The name cannot be written
// in a threshold (the checker refuses unknown functions before this runs).
const finiteFunc = "__mqplan_finite"

// scaleFunc is the function a duration × fraction becomes (see
// checker.binary): like finiteFunc, it cannot be written in a threshold.
const scaleFunc = "__mqplan_scale"

// scale multiplies a duration by a fraction, rounding to the nanosecond;
// a product that is not a finite duration (the fraction is Inf or NaN, or
// the product overflows) stops the evaluation as finite does.
func scale(params ...any) (any, error) {
	d, _ := params[0].(time.Duration)
	f, _ := params[1].(float64)
	v := float64(d) * f
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= math.MaxInt64 {
		return nil, &nonFinite{value: v, index: -1}
	}
	return time.Duration(math.Round(v)), nil
}

// nonFinite is the error finite stops the evaluation with: which
// arithmetic gave what.
type nonFinite struct {
	value float64
	index int // into Threshold.arith
}

func (e *nonFinite) Error() string { return fmt.Sprintf("%v", e.value) }

// finite passes a finite value through and stops on Inf or NaN.
func finite(params ...any) (any, error) {
	f, _ := params[0].(float64)
	i, _ := params[1].(int)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &nonFinite{value: f, index: i}
	}
	return f, nil
}
