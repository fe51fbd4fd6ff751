package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// roundTripCases are the golden runs and a few more that exercise what
// the golden ones do not: a plan that skips certificate checks (its
// warning is the plan's, not the run's), a group whose name is not an
// identifier (groups["pub-1"] in a threshold), phase-scoped thresholds, a
// reconnect policy, a will and a publisher with an interval.
func roundTripCases(t *testing.T) []struct {
	name string
	r    *Result
} {
	cases := goldenCases(t)

	insecure := testPlan("p99 < 10ms")
	insecure.Broker.TLS = &plans.TLS{CA: "ca.pem", InsecureSkipVerify: true}
	insecure.Broker.URLs = []string{"mqtts://user:secret@broker.example:8883"}
	cases = append(cases, struct {
		name string
		r    *Result
	}{"insecure TLS", Evaluate(insecure, withBuiltins(t, insecure), fullStats(t))})

	odd := testPlan(`groups["pub-1"].send_rate >= 790`, "p99 <= baseline.p99 * 1.10", "phases.steady.latency.p99 < 1s", "phases.connect.connect.p99 < 1s")
	odd.Groups[1].Name = "pub-1"
	odd.Groups[1].Reconnect = &plans.Reconnect{After: 1500 * 1e6, Max: 3}
	odd.Groups[1].Will = &plans.Will{Topic: plans.MustTemplate("will/%c"), Payload: "gone", QoS: 1}
	odd.Groups[1].Publish.Rate, odd.Groups[1].Publish.Every = 0, 5e6
	odd.Warmup, odd.Ramp = 2e9, 3e9
	odd.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe} // echoed and read back
	odd.Drain, odd.DrainQuiet = 30e9, 1e9                          // drain: {max: 30s, quiet: 1s}, echoed and read back
	// The run's groups and its timeline's are the plan's.
	renamed := func() *stats.Stats {
		st := fullStats(t)
		st.Groups[1].Name = "pub-1"
		for i := range st.Timeline {
			for j := range st.Timeline[i].Groups {
				if g := &st.Timeline[i].Groups[j]; g.Group == "pub" {
					g.Group = "pub-1"
				}
			}
		}
		return st
	}
	cases = append(cases, struct {
		name string
		r    *Result
	}{"odd names", Evaluate(odd, withBuiltins(t, odd), renamed())})

	// Request/response: a responder group, a requesting one, the
	// section and the rtt row, and a comparison with itself as baseline.
	rr := testPlan("rtt.p99 < 10ms", "rtt.timeouts == 0")
	rr.Groups[0].Subscribe = nil
	rr.Groups[0].Respond = &plans.Respond{Topic: plans.MustTemplate("bench/%i"), QoS: 1, Size: 32}
	rr.Groups[1].Publish.ResponseTopic = plans.MustTemplate("resp/%c")
	rr.Groups[1].Publish.ResponseTimeout = 2e9
	rrRun := Evaluate(rr, withBuiltins(t, rr), withRequests(t, fullStats(t)))
	rrRun.Comparison = Compare(rrRun, rrRun, "base.json", "this run", DefaultTolerance)
	cases = append(cases, struct {
		name string
		r    *Result
	}{"request/response", rrRun})

	// A listen-only run's rates are over its delivery window.
	window := Evaluate(odd, withBuiltins(t, odd), renamed())
	window.RateWindow = 2500 * time.Millisecond
	cases = append(cases, struct {
		name string
		r    *Result
	}{"rate window", window})
	return cases
}

// TestReadJSONRoundTrip: writing what ReadJSON read gives the same bytes,
// in every format (the JSON, the table, JUnit, Markdown, CSV, HTML), so
// that a saved result re-renders as the run wrote it: its comparison with
// a baseline included.
func TestReadJSONRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := WriteJSON(&want, tc.r); err != nil {
				t.Fatal(err)
			}
			back, err := ReadJSON(bytes.NewReader(want.Bytes()))
			if err != nil {
				t.Fatalf("ReadJSON: %v", err)
			}
			var got bytes.Buffer
			if err := WriteJSON(&got, back); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("JSON differs after a round trip:\n%s", firstDiff(want.String(), got.String()))
			}
			for _, f := range formats {
				var want, got bytes.Buffer
				if err := f.Write(&want, tc.r); err != nil {
					t.Fatal(err)
				}
				if err := f.Write(&got, back); err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("%s differs after a round trip:\n%s", f.Name, firstDiff(want.String(), got.String()))
				}
			}
			if (back.Comparison == nil) != (tc.r.Comparison == nil) {
				t.Errorf("comparison %v after a round trip, want %v", back.Comparison != nil, tc.r.Comparison != nil)
			}
			if back.Verdict() != tc.r.Verdict() {
				t.Errorf("verdict %s, want %s", back.Verdict(), tc.r.Verdict())
			}
		})
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n  want " + x + "\n  got  " + y
		}
	}
	return "(no line differs)"
}

// TestReadJSONRefuses: a file that is not an mqplan result of this
// version is refused with one line saying so, never read into a report.
func TestReadJSONRefuses(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, goldenCases(t)[0].r); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	tests := []struct {
		name, doc, want string
		limit           int64
	}{
		{name: "empty", doc: "", want: "not an mqplan result: line 1: unexpected end of JSON input"},
		{name: "not JSON", doc: "mqplan 1to1 | PASS\n", want: "not an mqplan result: line 1: invalid character"},
		{name: "a list", doc: "[1, 2]", want: "not an mqplan result: line 1: json: cannot unmarshal array"},
		{name: "another JSON document", doc: `{"name": "x", "version": "1.2.3"}`, want: `not an mqplan result: no "version" or "verdict" key`},
		{name: "a find-max search", doc: `{"plan": "p", "knob": "groups.pub.rate", "status": "confirmed", "trials": []}`, want: `an mqplan find-max search (knob and trials), not a run's result`},
		{name: "a knob alone is not a search", doc: `{"knob": "x"}`, want: `not an mqplan result: no "version" or "verdict" key`},
		{name: "version not a number", doc: `{"version": "1", "verdict": "PASS"}`, want: `not an mqplan result: "version" is "\"1\"", not a number`},
		{name: "version an object", doc: "{\"verdict\": \"PASS\", \"version\": {\n\"major\": 1, \"minor\": 2, \"note\": \"a long note to be cut\"}}",
			want: `not an mqplan result: "version" is "{\n\"major\": 1, \"minor\": 2, \"note\": \"a lon...", not a number`},
		{name: "newer version", doc: edit(`"version": 1,`, `"version": 2,`), want: "the result is JSON version 2, written by a newer mqplan; this mqplan reads version 1"},
		{name: "older version", doc: edit(`"version": 1,`, `"version": 0,`), want: "the result is JSON version 0, written by an older mqplan"},
		{name: "trailing data", doc: good + "{}", want: "invalid character '{' after top-level value"},
		{name: "verdict edited", doc: edit(`"verdict": "FAIL"`, `"verdict": "PASS"`), want: `its verdict "PASS" disagrees with its thresholds and completion, which give "FAIL"`},
		{name: "bad duration", doc: edit(`"elapsed": "11.7s"`, `"elapsed": "soon"`), want: `bad duration "soon"`},
		{name: "count as a duration", doc: edit(`"acked": 7998`, `"acked": "1s"`), want: "metrics.top: acked: a string for a count"},
		{name: "unknown phase", doc: edit(`"name": "connect"`, `"name": "launch"`), want: `phases: unknown phase "launch"`},
		{name: "negative process memory", doc: edit(`"rss_bytes": 4194304`, `"rss_bytes": -1`), want: "timeline[0].broker: cpu_percent 20 and rss_bytes -1 must not be negative"},
		{name: "negative broker counter", doc: edit(`"publish_received": 1800`, `"publish_received": -1`), want: "timeline[0].counters: publish_received is -1: must not be negative"},
		{name: "unknown broker counter", doc: edit(`"publish_sent": 10113`, `"publish_snet": 10113`), want: `broker_counters.end: unknown counter "publish_snet"`},
		{name: "bad reference", doc: edit(`"metric": "connect.failed"`, `"metric": "groups."`), want: `bad metric reference "groups."`},
		{name: "timeline not a list", doc: edit(`"timeline": [`, `"timeline": 5, "x": [`), want: "timeline: json: cannot unmarshal number into a list of seconds"},
		{name: "trailing data after space", doc: good + "\n\n  x", want: "invalid character 'x' after top-level value"},
		{name: "newer version after its timeline", doc: `{"timeline": [{"at": 5}], "verdict": "PASS", "version": 2}`, want: "the result is JSON version 2, written by a newer mqplan"},
		{name: "too large", doc: good, limit: 1000, want: "larger than the 1000 bytes a result may have"},
		{name: "too large by MiB", doc: strings.Repeat(" ", 2<<20+1), limit: 2 << 20, want: "larger than the 2 MiB a result may have"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit
			if limit == 0 {
				limit = MaxJSONSize
			}
			r, err := readJSON(strings.NewReader(tt.doc), limit)
			if err == nil {
				t.Fatalf("read a result (%s), want an error", r.Verdict())
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// baselineJSON is the golden "baseline" result and its JSON, with where
// its comparison with the baseline starts.
func baselineJSON(t *testing.T) (r *Result, doc string, at int) {
	t.Helper()
	for _, tc := range goldenCases(t) {
		if tc.name == "baseline" {
			r = tc.r
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	doc = b.String()
	at = strings.Index(doc, `"baseline": {`)
	if at < 0 {
		t.Fatal("the fixture has no baseline comparison")
	}
	return r, doc, at
}

// TestReadJSONRefusesComparison: a saved comparison with the baseline
// that mqplan did not write is refused, saying where, rather than shown.
func TestReadJSONRefusesComparison(t *testing.T) {
	_, good, base := baselineJSON(t)
	// edit replaces the first old in the comparison.
	edit := func(old, new string) string {
		i := strings.Index(good[base:], old)
		if i < 0 {
			t.Fatalf("the comparison lacks %q", old)
		}
		return good[:base+i] + new + good[base+i+len(old):]
	}
	// editAfter replaces the first old after anchor in the comparison.
	editAfter := func(anchor, old, new string) string {
		i := strings.Index(good[base:], anchor)
		j := strings.Index(good[base+i:], old)
		if i < 0 || j < 0 {
			t.Fatalf("the comparison lacks %q after %q", old, anchor)
		}
		at := base + i + j
		return good[:at] + new + good[at+len(old):]
	}
	// editDoc changes the document as decoded into maps.
	editDoc := func(change func(doc, cmp map[string]any, sections []any)) string {
		var doc map[string]any
		if err := json.Unmarshal([]byte(good), &doc); err != nil {
			t.Fatal(err)
		}
		cmp := doc["baseline"].(map[string]any)
		change(doc, cmp, cmp["sections"].([]any))
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// dropRow leaves the row of metric out of section i.
	dropRow := func(i int, metric string) string {
		return editDoc(func(_, _ map[string]any, sections []any) {
			sec := sections[i].(map[string]any)
			rows := sec["rows"].([]any)
			sec["rows"] = slices.DeleteFunc(rows, func(r any) bool { return r.(map[string]any)["metric"] == metric })
			if len(sec["rows"].([]any)) != len(rows)-1 {
				t.Fatalf("section %d has no row %s", i, metric)
			}
		})
	}
	tests := []struct{ name, doc, want string }{
		{"another comparison version", edit(`"version": 1`, `"version": 2`), "baseline.version: comparison version 2, this mqplan reads 1"},
		{"negative tolerance", edit(`"tolerance": 0.05`, `"tolerance": -1`), "baseline.tolerance: tolerance -1 out of range"},
		{"unknown mark", edit(`"mark": "worse"`, `"mark": "awful"`), `baseline.sections[0].rows[7].mark: lost: mark "awful"`},
		{"a latency as a number", edit(`"a": "1ms"`, `"a": 1`), "baseline.sections[0].rows[2].a: latency.p50: a number for a duration"},
		{"a row without a metric", edit(`"metric": "send_rate"`, `"metric": ""`), "baseline.sections[0].rows[0].metric: a row without a metric"},
		{"a metric mqplan compare does not compare", edit(`"metric": "send_rate"`, `"metric": "no.such.metric"`),
			`baseline.sections[0].rows[0].metric: "no.such.metric" is not a metric mqplan compare compares`},
		{"a metric compared twice", edit(`"metric": "recv_rate"`, `"metric": "send_rate"`),
			"baseline.sections[0].rows[1].metric: send_rate is compared twice in the total"},
		{"a group compared twice", edit(`"group": "pub"`, `"group": "sub"`), `baseline.sections[2].group: group "sub" is compared twice`},
		{"a group this run does not have", edit(`"group": "sub"`, `"group": "nosuch"`), `baseline.sections[1].group: this run has no group "nosuch"`},
		{"a negative count", edit(`"a": 0,`, `"a": -5,`), "baseline.sections[0].rows[7].a: -5 is negative"},
		{"a negative latency", edit(`"a": "1ms"`, `"a": "-1ms"`), "baseline.sections[0].rows[2].a: -1ms is negative"},
		{"a fraction above 1", edit(`"b": 0.00125`, `"b": 1.5`), "baseline.sections[0].rows[8].b: 1.5 is not a share between 0 and 1"},
		{"b is not this run's figure", edit(`"b": "1.5ms"`, `"b": "2.6ms"`),
			"baseline.sections[0].rows[4].b: 2.6ms disagrees with this run's own latency.p99, 1.5ms: the file was edited"},
		{"b is not this group's figure", edit(`"b": 10,`, `"b": 11,`), "baseline.sections[0].rows[7].b: 11 disagrees with this run's own lost, 10"},
		{"a is not the baseline's figure its threshold read", edit(`"a": "1.5ms"`, `"a": "50ms"`),
			"baseline.sections[0].rows[4].a: 50ms disagrees with the baseline's latency.p99, 1.5ms, as thresholds[0] read it: the file was edited"},
		{"a is not the baseline group's figure its threshold read", editAfter(`"group": "sub"`, `"a": 800,`, `"a": 900,`),
			"baseline.sections[1].rows[0].a: 900 disagrees with the baseline's groups.sub.recv_rate, 800, as thresholds[1] read it"},
		{"a absent where the threshold read the baseline's figure", editAfter(`"metric": "loss_rate"`, `"a": 0,`, `"a": null,`),
			"baseline.sections[0].rows[8].a: - disagrees with the baseline's loss_rate, 0%, as thresholds[2] read it"},
		{"the threshold's baseline figure edited instead", editDoc(func(doc, _ map[string]any, _ []any) {
			v := doc["thresholds"].([]any)[0].(map[string]any)["values"].([]any)[1].(map[string]any)
			if v["metric"] != "baseline.latency.p99" {
				t.Fatalf("thresholds[0].values[1] is %v", v["metric"])
			}
			v["value"] = "2ms"
		}),
			"baseline.sections[0].rows[4].a: 1.5ms disagrees with the baseline's latency.p99, 2ms, as thresholds[0] read it"},
		{"two thresholds read the baseline's figure differently", editDoc(func(doc, _ map[string]any, _ []any) {
			ths := doc["thresholds"].([]any)
			var again map[string]any
			b, _ := json.Marshal(ths[0])
			if err := json.Unmarshal(b, &again); err != nil {
				t.Fatal(err)
			}
			again["values"].([]any)[1].(map[string]any)["value"] = "2ms"
			doc["thresholds"] = append(ths, again)
		}), "thresholds[11].values[1].value: 2ms disagrees with the 1.5ms thresholds[0] read: the file was edited"},
		{"a row left out", dropRow(0, "latency.p99"),
			"baseline.sections[0].rows: no row for latency.p99, which mqplan compare gives for these runs' figures: the file was edited"},
		{"a group's row left out", dropRow(1, "lost"), "baseline.sections[1].rows: no row for groups.sub.lost, which mqplan compare gives"},
		{"a group's send rate left out", dropRow(2, "send_rate"), "baseline.sections[2].rows: no row for groups.pub.send_rate, which"},
		{"a row mqplan compare does not give", editDoc(func(_, _ map[string]any, sections []any) {
			sec := sections[2].(map[string]any)
			sec["rows"] = append(sec["rows"].([]any), map[string]any{"metric": "latency.p50", "a": nil, "b": nil, "mark": ""})
		}), "baseline.sections[2].rows[8].metric: mqplan compare gives no row for groups.pub.latency.p50 when neither run has it: the file was edited"},
		{"the total's section left out", editDoc(func(_, cmp map[string]any, sections []any) { cmp["sections"] = sections[1:] }),
			"baseline.sections: no section for the total, which mqplan compare always gives: the file was edited"},
		{"a group's section left out", editDoc(func(_, cmp map[string]any, sections []any) { cmp["sections"] = sections[:2] }),
			`baseline.sections: no section for group "pub", which the baseline has (it is not in only_b): the file was edited`},
		{"b absent where this run measured", edit(`"b": "700µs"`, `"b": null`), "baseline.sections[0].rows[6].b: - disagrees with this run's own ack.p99, 700µs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ReadJSON(strings.NewReader(tt.doc))
			if err == nil {
				t.Fatalf("read a result (%s), want an error", r.Verdict())
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q\nwant one line with %q", err, tt.want)
			}
		})
	}
}

// TestReadJSONDerivesComparison: what a saved comparison's values give
// (the marks, the change, this run's side) is derived on reading, not
// taken from the file, so that no format shows a mark or a run its
// figures contradict.
func TestReadJSONDerivesComparison(t *testing.T) {
	r, good, base := baselineJSON(t)
	edit := func(doc, old, new string) string {
		i := strings.Index(doc[base:], old)
		if i < 0 {
			t.Fatalf("the comparison lacks %q", old)
		}
		return doc[:base+i] + new + doc[base+i+len(old):]
	}
	tests := []struct {
		name string
		doc  string
		// check says what is wrong with the comparison read back, or "".
		check func(c *Comparison) string
	}{
		{"a worse mark on an unchanged figure", edit(good, `"mark": ""`, `"mark": "worse"`), func(c *Comparison) string {
			if m := c.Sections[0].Rows[0].Mark; m != Same {
				return fmt.Sprintf("send_rate marked %q, want no mark (800 to 800)", m)
			}
			return ""
		}},
		{"a changed figure without its mark", edit(good, `"mark": "worse"`, `"mark": ""`), func(c *Comparison) string {
			if m := c.Sections[0].Rows[7].Mark; m != Worse {
				return fmt.Sprintf("lost (0 to 10) marked %q, want WORSE", m)
			}
			return ""
		}},
		{"a baseline value within the tolerance", edit(edit(good, `"a": 800,
            "b": 799.3,`, `"a": 799.31,
            "b": 799.3,`), `"mark": ""`, `"mark": ""`), func(c *Comparison) string {
			row := c.Sections[0].Rows[1]
			if row.Mark != Same || math.Abs(row.Change-(799.3-799.31)/799.31) > 1e-12 {
				return fmt.Sprintf("recv_rate 799.31 to 799.3: change %v mark %q, want the change recomputed and no mark", row.Change, row.Mark)
			}
			return ""
		}},
		{"this run's side edited", edit(good, `"elapsed": "11.7s",
      "verdict": "FAIL"`, `"elapsed": "16m39s",
      "verdict": "PASS"`), func(c *Comparison) string {
			if c.B.Elapsed != r.Elapsed || c.B.Verdict != VerdictFail || c.B.Label != thisRun {
				return fmt.Sprintf("this run's side %+v, want this result's own elapsed %s and verdict FAIL", c.B, r.Elapsed)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			back, err := ReadJSON(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(back.Comparison); msg != "" {
				t.Error(msg)
			}
			// The summary and the worse list follow the derived marks.
			if got, want := back.Comparison.Summary(), Compare(r.Baseline.Result, r, r.Baseline.File, thisRun, DefaultTolerance).Summary(); tt.name != "a baseline value within the tolerance" && got != want {
				t.Errorf("summary %q\nwant %q", got, want)
			}
		})
	}
}

// TestReadJSONErrorLines: an error in a file read as a stream names the
// line it is on, in the timeline (read second by second) as elsewhere.
func TestReadJSONErrorLines(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, goldenCases(t)[0].r); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	tests := []struct {
		name, old, new string
		want           string // %d: the line of old
	}{
		{"syntax error in the timeline", `"at": "2s",`, `"at": "2s",,`, "reading the result: line %d: invalid character ','"},
		{"syntax error between keys", `"at": "2s",`, `"at": "2s" "x",`, `reading the result: line %d: invalid character '"' after object key:value pair`},
		{"type error in a second", `"connected": 7,`, `"connected": "7",`, "reading the result: line %d: timeline[0]: json: cannot unmarshal string"},
		{"type error in the plan", `"count": 4,`, `"count": "four",`, "reading the result: line %d: plan: json: cannot unmarshal string"},
		{"syntax error before the version", `"version": 1,`, `,"version": 1,`, "not an mqplan result: line %d: invalid character ','"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := strings.Index(good, tt.old)
			if i < 0 {
				t.Fatalf("fixture lacks %q", tt.old)
			}
			doc := good[:i] + tt.new + good[i+len(tt.old):]
			want := fmt.Sprintf(tt.want, 1+strings.Count(good[:i], "\n"))
			_, err := ReadJSON(strings.NewReader(doc))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v\nwant one with %q", err, want)
			}
		})
	}
}

// TestReadJSONNewKeys: keys a newer mqplan of the same version adds are
// ignored, and metrics this one does not know keep the type their JSON
// form suggests.
func TestReadJSONNewKeys(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, goldenCases(t)[1].r); err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(b.String(), `"top": {`, `"top": {"future.count": 3, "future.rate": 2.5, "future.time": "2ms",`, 1)
	doc = strings.Replace(doc, `"version": 1,`, `"version": 1, "future_key": {"a": [1]},`, 1)
	r, err := ReadJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[metric.Name]string{"future.count": "3 int", "future.rate": "2.5 float64", "future.time": "2ms time.Duration"} {
		v := r.Measured.Top[name]
		if got := fmt.Sprintf("%s %T", fmtValue(v), v); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
}

// TestReadJSONMqplanVersion: the mqplan that wrote a result is read back
// with it, and a result written before the key reads as unknown, which
// no output then shows.
func TestReadJSONMqplanVersion(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, goldenCases(t)[1].r); err != nil {
		t.Fatal(err)
	}
	key := `  "mqplan_version": "` + testMqplanVersion + `",` + "\n"
	if !strings.Contains(b.String(), key) {
		t.Fatalf("the JSON has no %q", key)
	}
	tests := []struct {
		name, doc, want string
	}{
		{"with the key", b.String(), testMqplanVersion},
		{"without the key (an older result)", strings.Replace(b.String(), key, "", 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ReadJSON(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if r.MqplanVersion != tt.want {
				t.Errorf("MqplanVersion %q, want %q", r.MqplanVersion, tt.want)
			}
			for _, f := range formats {
				var out bytes.Buffer
				if err := f.Write(&out, r); err != nil {
					t.Fatal(err)
				}
				if f.Name == "csv" {
					continue // the timeline's data alone
				}
				shown := strings.Contains(out.String(), testMqplanVersion)
				if shown != (tt.want != "") {
					t.Errorf("%s shows the version: %v, want %v", f.Name, shown, tt.want != "")
				}
			}
		})
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in   string
		want threshold.Ref
	}{
		{"latency.p99", threshold.Ref{Metric: metric.LatencyP99}},
		{"sent", threshold.Ref{Metric: metric.Sent}},
		{"groups.sub.recv_rate", threshold.Ref{Scope: threshold.Groups, Name: "sub", Metric: metric.RecvRate}},
		{`groups["my-group"].latency.p99`, threshold.Ref{Scope: threshold.Groups, Name: "my-group", Metric: metric.LatencyP99}},
		{`groups["a\"].b"].sent`, threshold.Ref{Scope: threshold.Groups, Name: `a"].b`, Metric: metric.Sent}},
		{"phases.steady.ack.p99", threshold.Ref{Scope: threshold.Phases, Name: "steady", Metric: metric.AckP99}},
		{"baseline.latency.p99", threshold.Ref{Baseline: true, Metric: metric.LatencyP99}},
		{"baseline.groups.sub.recv_rate", threshold.Ref{Baseline: true, Scope: threshold.Groups, Name: "sub", Metric: metric.RecvRate}},
		{`baseline.groups["my-group"].sent`, threshold.Ref{Baseline: true, Scope: threshold.Groups, Name: "my-group", Metric: metric.Sent}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseRef(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseRef(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
	for _, bad := range []string{"", "baseline.", "baseline.groups.", "groups.", "groups.sub", `groups["x`, `groups["x"]`, `groups["x"]sent`} {
		if _, err := parseRef(bad); err == nil {
			t.Errorf("parseRef(%q) succeeded, want an error", bad)
		}
	}
}

// FuzzReadJSON: whatever the file holds, ReadJSON does not panic, and a
// result it accepts writes and reads back to the same bytes.
func FuzzReadJSON(f *testing.F) {
	for _, name := range []string{"fail", "pass", "incomplete", "faults"} {
		b, err := os.ReadFile(filepath.Join(goldenDir, name+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version": 1, "verdict": "PASS"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		var once bytes.Buffer
		if err := WriteJSON(&once, r); err != nil {
			t.Fatalf("WriteJSON of an accepted result: %v", err)
		}
		back, err := ReadJSON(bytes.NewReader(once.Bytes()))
		if err != nil {
			t.Fatalf("ReadJSON refuses what WriteJSON wrote: %v\n%s", err, once.Bytes())
		}
		var twice bytes.Buffer
		if err := WriteJSON(&twice, back); err != nil {
			t.Fatal(err)
		}
		if once.String() != twice.String() {
			t.Fatalf("not stable:\n%s", firstDiff(once.String(), twice.String()))
		}
		if err := WriteTable(io.Discard, back); err != nil {
			t.Fatal(err)
		}
	})
}
