package report

// This file is the comparison's JSON document: WriteComparisonJSON writes
// it, and ReadJSON reads it back from a result judged against a baseline.

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
)

// CompareJSONVersion is the version of the JSON comparison's shape, kept
// as JSONVersion is: it changes only when a key is removed or changes
// meaning.
const CompareJSONVersion = 1

// The JSON comparison document; see WriteComparisonJSON. The JSON result
// of a run judged against a baseline holds the same document under
// "baseline", and ReadJSON reads it back (comparison).
type jsonComparison struct {
	Version   int               `json:"version"`
	Tolerance float64           `json:"tolerance"`
	A         jsonCompared      `json:"a"`
	B         jsonCompared      `json:"b"`
	Notes     []string          `json:"notes"`
	Sections  []jsonCompSection `json:"sections"`
	OnlyA     []string          `json:"only_a"`
	OnlyB     []string          `json:"only_b"`
	Worse     []string          `json:"worse"`
	Summary   string            `json:"summary"`
	// Disturbed is Comparison.Disturbed, absent when B was not disturbed.
	Disturbed string `json:"disturbed,omitempty"`
}

type jsonCompared struct {
	File    string       `json:"file"`
	Plan    string       `json:"plan"`
	Started time.Time    `json:"started"`
	Elapsed jsonDuration `json:"elapsed"`
	Verdict string       `json:"verdict"`
	// MqplanVersion is ComparedRun.MqplanVersion, absent when not known.
	MqplanVersion string `json:"mqplan_version,omitempty"`
}

// json is the run's identity in the JSON comparison.
func (c ComparedRun) json() jsonCompared {
	return jsonCompared{File: c.Label, Plan: c.Plan, Started: c.Started, Elapsed: jsonDuration(c.Elapsed), Verdict: c.Verdict, MqplanVersion: c.MqplanVersion}
}

type jsonCompSection struct {
	Group string        `json:"group"`
	Rows  []jsonCompRow `json:"rows"`
}

type jsonCompRow struct {
	Metric string `json:"metric"`
	A      any    `json:"a"`
	B      any    `json:"b"`
	// Delta is b - a in the metric's unit and JSON form (a duration
	// string, a count, a rate or a fraction), null when either is
	// absent. Added after the first shipped: a reader of an older
	// document finds it absent.
	Delta any `json:"delta"`
	// Change is (b - a) / a, null when either is absent or a is 0.
	Change *float64 `json:"change"`
	Mark   string   `json:"mark"`
}

// doc is the comparison as its JSON document.
func (c *Comparison) doc() *jsonComparison {
	d := &jsonComparison{
		Version: CompareJSONVersion, Tolerance: c.Tolerance,
		A: c.A.json(), B: c.B.json(),
		Notes: list(c.Notes), Sections: []jsonCompSection{}, OnlyA: list(c.OnlyA), OnlyB: list(c.OnlyB),
		Worse: list(c.Worse()), Summary: c.Summary(), Disturbed: c.Disturbed,
	}
	for _, s := range c.Sections {
		js := jsonCompSection{Group: s.Group, Rows: []jsonCompRow{}}
		for _, r := range s.Rows {
			jr := jsonCompRow{Metric: string(r.Metric), A: valueJSON(r.A), B: valueJSON(r.B), Mark: strings.ToLower(r.Mark.String())}
			if delta := r.deltaValue(); delta != nil {
				jr.Delta = valueJSON(delta)
			}
			if !math.IsNaN(r.Change) && !math.IsInf(r.Change, 0) {
				ch := r.Change
				jr.Change = &ch
			}
			js.Rows = append(js.Rows, jr)
		}
		d.Sections = append(d.Sections, js)
	}
	return d
}

// deltaValue is B - A in the metric's Go type (see metric.Set): a
// duration, an int or a float64; nil when either is absent.
func (r CompareRow) deltaValue() any {
	if r.A == nil || r.B == nil {
		return nil
	}
	switch a := r.A.(type) {
	case time.Duration:
		if b, ok := r.B.(time.Duration); ok {
			return b - a
		}
	case int:
		if b, ok := r.B.(int); ok {
			return b - a
		}
	}
	// The difference of two rates or fractions carries the floats'
	// noise (800 - 799.3 is 0.7000000000000455): twelve significant
	// digits are more than any rate or fraction here means.
	d, _ := strconv.ParseFloat(strconv.FormatFloat(number(r.B)-number(r.A), 'g', 12, 64), 64)
	return d
}

// WriteComparisonJSON writes the comparison as an indented JSON document
// with the conventions of WriteJSON (durations as Go duration strings,
// absent values null, lists never null):
//
//	version      CompareJSONVersion
//	tolerance    the fraction within which a change is not marked
//	a, b         {file, plan, started, elapsed, verdict}
//	notes        what makes the comparison less than like for like
//	sections     [{group ("" for the total), rows: [{metric, a, b, delta, change, mark}]}]
//	             delta: b - a in the metric's unit; change: (b - a) / a,
//	             a fraction (0.1 is +10%); mark: "", "better" or "worse"
//	only_a, only_b  groups not compared
//	worse        the worse changes, as the summary names them; summary: its line
func WriteComparisonJSON(w io.Writer, c *Comparison) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c.doc()); err != nil {
		return fmt.Errorf("encoding the comparison: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// maxCompareRows bounds the rows a comparison read back may have: one
// section per group and one row per compared metric, for as many groups
// as a plan may have, leaves room; a document with more was not written
// by mqplan.
const maxCompareRows = 1 << 20

// comparison reads back the comparison doc wrote (the JSON result's
// "baseline"). Values are read as their metric's kind; what can be
// derived is derived again rather than trusted: the relative change and
// the mark (from the values and the tolerance, as Compare computes
// them; null in the document stands for both "absent" and "from 0"),
// and, by ReadJSON, this run's side (comparedRun). A metric mqplan
// compare does not compare, a section or a row twice are refused; an
// error starts with its path below "baseline" (".sections[0].rows[2]...").
func (d *jsonComparison) comparison() (*Comparison, error) {
	if d.Version != CompareJSONVersion {
		return nil, fmt.Errorf(".version: comparison version %d, this mqplan reads %d", d.Version, CompareJSONVersion)
	}
	if math.IsNaN(d.Tolerance) || d.Tolerance < 0 || d.Tolerance > MaxTolerance {
		return nil, fmt.Errorf(".tolerance: tolerance %v out of range (0 to %v)", d.Tolerance, MaxTolerance)
	}
	run := func(j jsonCompared) ComparedRun {
		return ComparedRun{Label: j.File, Plan: j.Plan, Started: j.Started, Elapsed: time.Duration(j.Elapsed), Verdict: j.Verdict, MqplanVersion: j.MqplanVersion}
	}
	c := &Comparison{A: run(d.A), B: run(d.B), Tolerance: d.Tolerance,
		Notes: nonEmpty(d.Notes), OnlyA: nonEmpty(d.OnlyA), OnlyB: nonEmpty(d.OnlyB), Disturbed: d.Disturbed}
	rows := 0
	groups := map[string]bool{}
	for i, js := range d.Sections {
		p := ".sections[" + strconv.Itoa(i) + "]"
		if groups[js.Group] {
			return nil, fmt.Errorf("%s.group: %s is compared twice", p, sectionName(js.Group))
		}
		groups[js.Group] = true
		sec := CompareSection{Group: js.Group}
		seen := map[metric.Name]bool{}
		for j, jr := range js.Rows {
			if rows++; rows > maxCompareRows {
				return nil, fmt.Errorf("%s: more than %d rows", p, maxCompareRows)
			}
			rp := p + ".rows[" + strconv.Itoa(j) + "]"
			row, err := jr.row(d.Tolerance)
			if err != nil {
				return nil, fmt.Errorf("%s%w", rp, err)
			}
			if seen[row.Metric] {
				return nil, fmt.Errorf("%s.metric: %s is compared twice in %s", rp, row.Metric, sectionName(js.Group))
			}
			seen[row.Metric] = true
			sec.Rows = append(sec.Rows, row)
		}
		c.Sections = append(c.Sections, sec)
	}
	c.applyDisturbed()
	return c, nil
}

// sectionName names a comparison's section in a message.
func sectionName(group string) string {
	if group == "" {
		return "the total"
	}
	return "group " + strconv.Quote(group)
}

// row reads one compared metric back, its change and mark derived from
// its values and tolerance. An error starts with the path below the row
// (".metric: ...", ".a: ...").
func (jr *jsonCompRow) row(tolerance float64) (CompareRow, error) {
	name := metric.Name(jr.Metric)
	if name == "" {
		return CompareRow{}, errors.New(".metric: a row without a metric")
	}
	m, ok := lookupCompared(name)
	if !ok {
		// Quoted: a hand-edited name may hold anything.
		return CompareRow{}, fmt.Errorf(".metric: %s is not a metric mqplan compare compares (%s)", strconv.Quote(jr.Metric), comparedNames())
	}
	var a, b any
	var err error
	for _, v := range []struct {
		side string
		in   any
		out  *any
	}{{"a", jr.A, &a}, {"b", jr.B, &b}} {
		if v.in == nil {
			continue
		}
		if *v.out, err = metricValue(name, v.in); err != nil {
			return CompareRow{}, fmt.Errorf(".%s: %s: %w", v.side, name, err)
		}
	}
	switch jr.Mark {
	case "", "better", "worse", "disturbed":
	default:
		return CompareRow{}, fmt.Errorf(".mark: %s: mark %s, want \"\", \"better\", \"worse\" or \"disturbed\"", name, strconv.Quote(jr.Mark))
	}
	return m.row(a, b, tolerance), nil
}

// comparedNames lists the compared metrics for a message.
func comparedNames() string {
	var names []string
	for _, m := range allCompared() {
		names = append(names, string(m.name))
	}
	return strings.Join(names, ", ")
}
