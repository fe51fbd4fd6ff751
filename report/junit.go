package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/threshold"
)

// The JUnit XML report (--out junit=FILE), for CI servers that show test
// results: Jenkins (the junit and xunit plugins), GitLab's test reports,
// and the GitHub actions that read JUnit. Its shape is the one Jenkins'
// JUnit schema describes (testdata/junit/jenkins-junit.xsd pins it):
//
//	<testsuites name="mqplan" tests failures errors time>
//	  <testsuite name="mqplan PLAN [LABEL]" tests failures errors skipped time timestamp hostname>
//	    <properties> plan, label (when given), plan_file, broker, timestamp, verdict, summary,
//	                 mqplan_version (when known), and with a baseline: baseline, baseline_plan,
//	                 baseline_started, baseline_comparison; then value.METRIC for
//	                 every value a test case measured (value.p99 = 8.03ms) </properties>
//	    <testcase classname="mqplan.PLAN.LABEL.run" name="[LABEL] run completed" time>
//	      <error type="incomplete" message="..."/>        only when INCOMPLETE
//	      <system-out> the run's headline values </system-out>
//	    <testcase classname="mqplan.PLAN.LABEL.thresholds" name="[LABEL] EXPR" time="0">
//	      <failure type="threshold" message="EXPR: measured">details</failure>
//	      <system-out> the values the threshold read, one a line </system-out>
//	    <testcase classname="mqplan.PLAN.LABEL.builtin" name="[LABEL] built-in check: EXPR" time="0">
//	    <system-out> warnings and error samples </system-out>
//
// Without a label, "[LABEL] " and ".LABEL" are left out. The label is in
// the names, not only a property, because the tools that merge the reports
// of a CI matrix (junit-report-merger, Jenkins, GitLab) tell suites and
// test cases apart by name alone: two brokers' "p99 < 10ms" would
// otherwise be folded into one case.
//
// Every test case carries what it measured, passing ones too, so that a
// green CI report shows the figures: in its system-out (one "METRIC =
// VALUE" a line, the values as the thresholds write them) and as the
// suite's value.METRIC properties, which dashboards reading JUnit take as
// key-value pairs. Properties sit on the suite because Jenkins' schema
// allows none on a test case; a metric read by several thresholds has one
// value in a run, so one property.
//
// One run is one suite. The run itself is a test case ("run completed"),
// so that an incomplete run is an error a CI server counts even when every
// threshold held on the part that was measured; each threshold is a test
// case, the built-in integrity checks named as such so that a reader knows
// no plan line wrote them. Test case names are the expressions as written,
// which stay the same from run to run, so that a CI server's history of a
// threshold follows it; a threshold written twice gets " [2]" after its
// second name. A threshold is judged in no measurable time: its time is 0;
// the run's test case and the suite take the run's length.

// junitSuites is the document's root.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  *junitCDATA     `xml:"system-out"`
}

// junitCDATA is an element's text as CDATA.
type junitCDATA struct {
	Text string `xml:",cdata"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Error     *junitProblem `xml:"error"`
	Failure   *junitProblem `xml:"failure"`
	// Skipped marks a threshold that was not judged: mqplan's own
	// disturbance explains its failure (the message is the evidence).
	Skipped *junitSkipped `xml:"skipped"`
	// SystemOut holds the values the case measured.
	SystemOut *junitCDATA `xml:"system-out"`
}

// junitSkipped is a test case left unjudged, and why.
type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// junitProblem is a failure or an error: a one-line message for lists, a
// type, and the details as the element's text.
type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	// Text is CDATA, so that its lines read as lines in the file.
	Text string `xml:",cdata"`
}

// WriteJUnit writes the result as JUnit XML (see the shape above): one
// test suite for the run, one test case for the run's completion and one
// for each threshold, built-in checks included. The broker URL is shown
// with its password masked, like everywhere else.
func WriteJUnit(w io.Writer, r *Result) error {
	doc := r.junit()
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encoding the JUnit report: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encoding the JUnit report: %w", err)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// junitSeconds is a duration as JUnit's time attribute: seconds with
// millisecond precision ("11.700").
func junitSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

func (r *Result) junit() junitSuites {
	plan := orDash(r.name())
	class, prefix := "mqplan."+plan, ""
	if r.Label != "" {
		class, prefix = class+"."+r.Label, "["+r.Label+"] "
	}
	suite := junitSuite{
		Name:     "mqplan " + r.titled(),
		Time:     junitSeconds(r.Elapsed),
		Hostname: r.Hostname,
	}
	if !r.Started.IsZero() {
		// Ant's and Jenkins' timestamp: ISO 8601 without a zone, here
		// in UTC; the timestamp property has the zone.
		suite.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	file := ""
	if r.Plan != nil {
		file = r.Plan.File
	}
	suite.Properties = []junitProperty{
		{"plan", plan},
	}
	if r.Label != "" {
		suite.Properties = append(suite.Properties, junitProperty{"label", r.Label})
	}
	suite.Properties = append(suite.Properties, []junitProperty{
		{"plan_file", orDash(file)},
		{"broker", r.brokerLabel()},
		{"timestamp", r.startedRFC3339()},
		{"verdict", r.Verdict()},
		{"summary", r.Summary()},
	}...)
	if r.MqplanVersion != "" {
		suite.Properties = append(suite.Properties, junitProperty{"mqplan_version", r.MqplanVersion})
	}
	if c := r.Comparison; c != nil {
		suite.Properties = append(suite.Properties,
			junitProperty{"baseline", orDash(c.A.Label)},
			junitProperty{"baseline_plan", orDash(c.A.Plan)},
			junitProperty{"baseline_started", rfc3339(c.A.Started)},
			junitProperty{"baseline_comparison", c.Summary()},
		)
	}

	values := junitValues{seen: map[string]bool{}}
	run := junitCase{Name: prefix + "run completed", Classname: class + ".run", Time: junitSeconds(r.Elapsed)}
	run.SystemOut = values.add(r.headlineValues())
	if !r.Complete() {
		why := r.incompleteReasons()
		run.Error = &junitProblem{
			Type:    "incomplete",
			Message: why,
			Text:    xmlText(r.Summary()) + "\nThe thresholds below were judged on what was measured before the run stopped; no verdict on them stands.\n",
		}
	}
	suite.Cases = append(suite.Cases, run)

	seen := map[string]int{}
	for _, th := range r.Thresholds {
		name, cls := th.Expr, class+".thresholds"
		if th.Builtin {
			name, cls = "built-in check: "+th.Expr, class+".builtin"
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name += " [" + strconv.Itoa(n) + "]"
		}
		c := junitCase{Name: prefix + name, Classname: cls, Time: junitSeconds(0), SystemOut: values.add(th.Values)}
		if th.NotJudged != "" {
			c.Skipped = &junitSkipped{Message: th.Expr + ": " + thresholdResult(th) + ": " + th.NotJudged}
		} else if !th.Pass {
			c.Failure = &junitProblem{
				Type:    "threshold",
				Message: th.Expr + ": " + thresholdResult(th),
				Text:    xmlText(thresholdDetails(th, r.Comparison)),
			}
		}
		suite.Cases = append(suite.Cases, c)
	}

	suite.Properties = append(suite.Properties, values.props...)
	for _, c := range suite.Cases {
		suite.Tests++
		if c.Failure != nil {
			suite.Failures++
		}
		if c.Error != nil {
			suite.Errors++
		}
		if c.Skipped != nil {
			suite.Skipped++
		}
	}

	var out strings.Builder
	for _, w := range r.headerWarnings() {
		fmt.Fprintf(&out, "WARNING: %s\n", w)
	}
	if len(r.ErrorSamples) > 0 {
		fmt.Fprintf(&out, "Errors (%s in all, by kind, over the whole run):\n", count(r.Measured.Top, metric.Errors))
		for _, e := range r.ErrorSamples {
			fmt.Fprintf(&out, "  %s\n", e)
		}
	}
	if out.Len() > 0 {
		suite.SystemOut = &junitCDATA{xmlText(out.String())}
	}

	return junitSuites{
		Name: "mqplan", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite},
	}
}

// xmlText replaces what XML cannot hold (control characters other than
// tab and line breaks, invalid UTF-8) with U+FFFD, as encoding/xml does
// for attributes and text but not for CDATA.
func xmlText(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c == '\t' || c == '\n' || c == '\r':
			return c
		case c < 0x20 || c == 0xFFFE || c == 0xFFFF || c >= 0xD800 && c <= 0xDFFF:
			return '\uFFFD'
		}
		return c
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// startedRFC3339 is the run's start with its zone, or "-" when unknown.
func (r *Result) startedRFC3339() string { return rfc3339(r.Started) }

// rfc3339 is t with its zone, or "-" when unknown.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return absent
	}
	return t.Format(time.RFC3339Nano)
}

// thresholdResult is a failed threshold's outcome in a line: the values it
// read, and the reason when it says more than "false" (no samples).
func thresholdResult(th ThresholdOutcome) string {
	s := measuredValues(th.Values)
	if th.Reason != "" && th.Reason != "false" {
		if s != "" {
			s += " "
		}
		s += "(" + th.Reason + ")"
	}
	return s
}

// thresholdDetails is a failed threshold's failure text: what was
// written, where, and what was measured; for a threshold that read the
// baseline (c, nil without one), which run that was and its values apart
// from this run's, so that the failure says how far from the baseline
// this run was.
func thresholdDetails(th ThresholdOutcome, c *Comparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, "threshold: %s\n", th.Expr)
	if th.Builtin {
		b.WriteString("written by: mqplan (a built-in integrity check)\n")
	} else {
		fmt.Fprintf(&b, "written at: %s\n", th.Pos)
	}
	fmt.Fprintf(&b, "measured: %s\n", orDash(measuredValues(th.Values)))
	var base, run []threshold.Value
	for _, v := range th.Values {
		if v.Ref.Baseline {
			base = append(base, v)
		} else {
			run = append(run, v)
		}
	}
	if c != nil && len(base) > 0 {
		fmt.Fprintf(&b, "baseline: %s (plan %s, started %s, %s)\n", orDash(c.A.Label), orDash(c.A.Plan), rfc3339(c.A.Started), c.A.Verdict)
		fmt.Fprintf(&b, "baseline values: %s\n", measuredValues(base))
		fmt.Fprintf(&b, "this run's values: %s\n", orDash(measuredValues(run)))
	}
	if th.Reason != "" && th.Reason != "false" {
		fmt.Fprintf(&b, "reason: %s\n", th.Reason)
	}
	return b.String()
}

// junitValues gathers the suite's value.METRIC properties, one per metric
// whichever test cases read it.
type junitValues struct {
	props []junitProperty
	seen  map[string]bool
}

// add records vs as properties and returns them as a test case's
// system-out, one "METRIC = VALUE" a line; nil when there are none.
func (j *junitValues) add(vs []threshold.Value) *junitCDATA {
	if len(vs) == 0 {
		return nil
	}
	var b strings.Builder
	for _, v := range vs {
		ref, val := v.Ref.String(), measuredValue(v)
		fmt.Fprintf(&b, "%s = %s\n", ref, val)
		if !j.seen[ref] {
			j.seen[ref] = true
			j.props = append(j.props, junitProperty{"value." + ref, xmlText(val)})
		}
	}
	return &junitCDATA{xmlText(b.String())}
}

// junitHeadline are the whole run's metrics the "run completed" test case
// shows: what a reader of a green report looks for first.
var junitHeadline = []metric.Name{
	metric.Sent, metric.Received, metric.Lost, metric.Duplicates, metric.Errors,
	metric.SendRate, metric.RecvRate, metric.LatencyP50, metric.LatencyP99,
}

// headlineValues are the junitHeadline metrics the run measured, as
// threshold values of the whole run.
func (r *Result) headlineValues() []threshold.Value {
	var vs []threshold.Value
	for _, n := range junitHeadline {
		if v, ok := r.Measured.Top[n]; ok {
			vs = append(vs, threshold.Value{Ref: threshold.Ref{Metric: n}, Value: v})
		}
	}
	return vs
}
