package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"html"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestThresholds(t *testing.T) {
	tests := []struct {
		name   string
		expr   string
		stats  func(testing.TB) *stats.Stats
		pass   bool
		reason string // substring of the reason when failing
		values string // measuredValues as the table shows them
	}{
		{"latency holds", "p99 < 10ms", fullStats, true, "", "latency.p99=1.5ms"},
		{"latency fails", "p99 < 1ms", fullStats, false, "false", "latency.p99=1.5ms"},
		{"loss fails", "loss_rate == 0", fullStats, false, "false", "loss_rate=0.00125"},
		{"connect failures from the connect phase count at the top", "connect.failed == 0", fullStats, false, "false", "connect.failed=1"},
		{"group rate", "groups.sub.recv_rate >= 790", fullStats, true, "", "groups.sub.recv_rate=799.3"},
		{"phase scope", "phases.connect.connect.failed == 1", fullStats, true, "", "phases.connect.connect.failed=1"},
		{"no samples fails", "p99 < 10ms", emptyStats, false, "no samples for latency.p99", "latency.p99=-"},
		{"no samples fails even when negated", "not (p99 > 10ms)", emptyStats, false, "no samples", "latency.p99=-"},
		{"a real zero count passes", "connect.failed == 0", emptyStats, true, "", "connect.failed=0"},
		{"payload bytes against a size, shown as the table shows memory", "received_bytes < 8MB and sent_bytes >= 8MB", fullStats, true, "", "received_bytes=7.6 MiB sent_bytes=7.6 MiB"},
		{"payload bytes above a binary size", "sent_bytes < 7.5MiB", fullStats, false, "false", "sent_bytes=7.6 MiB"},
		{"dup rate of a publisher has no samples", "groups.pub.dup_rate < 0.01", fullStats, false, "no samples for groups.pub.dup_rate", "groups.pub.dup_rate=-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(tc.expr)
			r := Evaluate(p, compile(t, p), tc.stats(t))
			if len(r.Thresholds) != 1 {
				t.Fatalf("got %d thresholds", len(r.Thresholds))
			}
			th := r.Thresholds[0]
			if th.Expr != tc.expr {
				t.Errorf("Expr = %q, want it as written, %q", th.Expr, tc.expr)
			}
			if th.Pass != tc.pass || r.Passed() != tc.pass {
				t.Errorf("Pass = %v, Passed() = %v, want %v (reason %q)", th.Pass, r.Passed(), tc.pass, th.Reason)
			}
			if !tc.pass && !strings.Contains(th.Reason, tc.reason) {
				t.Errorf("Reason = %q, want it to contain %q", th.Reason, tc.reason)
			}
			if got := measuredValues(th.Values); got != tc.values {
				t.Errorf("measured = %q, want %q", got, tc.values)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	pass := ThresholdOutcome{Expr: "a", Pass: true}
	fail := ThresholdOutcome{Expr: "b", Reason: "false"}
	tests := []struct {
		name             string
		r                Result
		passed, complete bool
		verdict, summary string
	}{
		{"no thresholds", Result{}, true, true, VerdictPass, "PASS: run completed (no thresholds)"},
		{"all held", Result{Thresholds: []ThresholdOutcome{pass, pass, pass}}, true, true, VerdictPass, "PASS: 3 of 3 thresholds held"},
		{"one held", Result{Thresholds: []ThresholdOutcome{pass}}, true, true, VerdictPass, "PASS: 1 of 1 threshold held"},
		{"one failed", Result{Thresholds: []ThresholdOutcome{pass, fail, pass}}, false, true, VerdictFail, "FAIL: 1 of 3 thresholds failed"},
		{"interrupted", Result{Interrupted: true, Thresholds: []ThresholdOutcome{pass, fail}}, false, false, VerdictIncomplete,
			"INCOMPLETE: interrupted (1 of 2 thresholds held on what was measured)"},
		{"incomplete", Result{Incomplete: "broker unreachable"}, true, false, VerdictIncomplete, "INCOMPLETE: broker unreachable"},
		{"both", Result{Interrupted: true, Incomplete: "group sub: no client could connect"}, true, false, VerdictIncomplete,
			"INCOMPLETE: interrupted; group sub: no client could connect"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Passed(); got != tc.passed {
				t.Errorf("Passed() = %v, want %v", got, tc.passed)
			}
			if got := tc.r.Complete(); got != tc.complete {
				t.Errorf("Complete() = %v, want %v", got, tc.complete)
			}
			if got := tc.r.Verdict(); got != tc.verdict {
				t.Errorf("Verdict() = %q, want %q", got, tc.verdict)
			}
			if got := tc.r.Summary(); got != tc.summary {
				t.Errorf("Summary() = %q, want %q", got, tc.summary)
			}
		})
	}
}

// outputs renders r in every format this package writes.
func outputs(t *testing.T, r *Result) map[string]string {
	t.Helper()
	var table, js bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	marshalled, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := WriteJSONFile(path, r); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"table": table.String(), "json": js.String(), "json.Marshal": string(marshalled), "json file": string(file)}
	// And every --out format, by its name.
	for _, f := range formats {
		var b bytes.Buffer
		if err := f.Write(&b, r); err != nil {
			t.Fatalf("--out %s: %v", f.Name, err)
		}
		text := b.String()
		if f.Name == "html" {
			// As a reader sees it: "broker's", not "broker&#39;s".
			text = html.UnescapeString(text)
		}
		out["--out "+f.Name] = text
	}
	return out
}

func TestNoSecretInOutputs(t *testing.T) {
	const urlPassword = "url-secret-pw"
	p := testPlan("p99 < 10ms")
	// Credentials can also sit in a broker URL, which both the plan echo
	// and the header line show.
	p.Broker.URLs = []string{"mqtt://alice:" + urlPassword + "@broker.example:1883"}
	// And in the broker's Prometheus endpoint, as user information and as
	// a token in its query.
	const scrapeSecret, scrapeToken = "scrape-secret-pw", "scrape-token-value"
	p.Broker.Metrics = &plans.BrokerMetrics{Sys: true, Prometheus: "https://alice:" + scrapeSecret + "@broker.example:18083/api/v5/prometheus/stats?token=" + scrapeToken}
	st := fullStats(t)
	st.BrokerURL = p.Broker.URLs[0]
	r := Evaluate(p, compile(t, p), st)
	for name, out := range outputs(t, r) {
		// (The CSV, the timeline alone, shows no broker URL at all.)
		if name != "--out csv" && !strings.Contains(out, "alice") {
			t.Errorf("%s output lost the user name along with the password", name)
		}
		for _, secret := range []string{subPassword, pubPassword, urlPassword, scrapeSecret, scrapeToken} {
			if strings.Contains(out, secret) {
				t.Errorf("%s output contains the password %q", name, secret)
			}
		}
	}
	if j := outputs(t, r)["json"]; !strings.Contains(j, `"prometheus": "https://***@broker.example:18083/api/v5/prometheus/stats?token=***"`) {
		t.Error("the JSON plan echo lacks the Prometheus endpoint, masked")
	}
	// The JSON does say that a password is set, masked.
	var doc struct {
		Plan struct {
			Groups []struct {
				Password string `json:"password"`
			} `json:"groups"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(outputs(t, r)["json"]), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Plan.Groups) != 2 || doc.Plan.Groups[0].Password != "******" {
		t.Errorf("plan echo groups = %+v, want the password masked as ******", doc.Plan.Groups)
	}
}

func TestWarnings(t *testing.T) {
	const lateWarning = "generator fell behind its schedule: 200 sends (2.5%) more than 1ms late"
	const brokerWarning = "the embedded broker dropped 10 messages: losses below are the broker's, not mqplan's"
	tests := []struct {
		name   string
		modify func(*stats.Stats)
		want   []string // in every output
		absent []string // in no output
		// tableHas says whether the table has its broker section.
		tableHas bool
	}{
		{"late sends and broker drops", func(*stats.Stats) {}, []string{lateWarning, brokerWarning}, nil, true},
		{"late sends at 1% are tolerated", func(st *stats.Stats) {
			setLate(st, 80) // exactly 1% of 8000
			st.Broker = nil
		}, nil, []string{"generator fell behind", "broker dropped"}, false},
		{"just above 1% warns", func(st *stats.Stats) {
			setLate(st, 81)
		}, []string{"generator fell behind its schedule: 81 sends (1.01%) more than 1ms late"}, nil, true},
		{"broker without drops", func(st *stats.Stats) {
			st.Broker.MessagesDropped, st.Broker.InflightDropped = 0, 0
		}, nil, []string{"broker dropped"}, true},
		{"inflight drops alone", func(st *stats.Stats) {
			st.Broker.MessagesDropped = 0
		}, []string{"the embedded broker dropped 3 messages"}, nil, true},
		{"deliveries no subscription implies", func(st *stats.Stats) {
			st.Phase(phase.Steady).Total.Unexpected = 35
		}, []string{"35 deliveries of this run's messages reached clients none of whose subscriptions match their topic"}, nil, true},
		{"values over the histograms' range", func(st *stats.Stats) {
			st.Phase(phase.Steady).Total.OverRange = 2
		}, []string{"2 measurements above the histograms' 60s limit"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := fullStats(t)
			tc.modify(st)
			r := Evaluate(testPlan(), nil, st)
			outs := outputs(t, r)
			for name, out := range outs {
				for _, w := range tc.want {
					// The CSV is the timeline's data alone, with no
					// verdict or warnings (see WriteCSV).
					if name != "--out csv" && !strings.Contains(out, w) {
						t.Errorf("%s output lacks %q", name, w)
					}
				}
				for _, a := range tc.absent {
					if strings.Contains(out, a) {
						t.Errorf("%s output has %q", name, a)
					}
				}
			}
			if got := strings.Contains(outs["table"], "Embedded broker"); got != tc.tableHas {
				t.Errorf("table has the broker section: %v, want %v", got, tc.tableHas)
			}
		})
	}
}

// setLate sets the steady phase's late sends (all from the publisher).
func setLate(st *stats.Stats, n int64) {
	ph := st.Phase(phase.Steady)
	ph.Total.Late = n
	ph.Groups[1].Late = n
}

func TestTableStyle(t *testing.T) {
	r := Evaluate(testPlan("p99 < 10ms"), nil, fullStats(t))
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"send/s total", "send/s per client", "recv/s per client", "| group", "p99.9", "loss rate"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q (headers must be kept as written, not upper-cased)", want)
		}
	}
	if strings.Contains(out, "SEND/S") || strings.Contains(out, "GROUP") {
		t.Error("table headers were upper-cased")
	}
	for _, bad := range []string{"\x1b", "─", "│", "┼"} {
		if strings.Contains(out, bad) {
			t.Errorf("table contains %q: CI logs need plain ASCII borders and no colour", bad)
		}
	}
	if !strings.HasSuffix(out, r.Summary()+"\n") {
		t.Errorf("table does not end with the verdict line %q", r.Summary())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	r := Evaluate(testPlan(), nil, fullStats(t))
	if err := WriteTable(failingWriter{}, r); err == nil {
		t.Error("WriteTable: no error from a failing writer")
	}
	if err := WriteJSON(failingWriter{}, r); err == nil {
		t.Error("WriteJSON: no error from a failing writer")
	}
}

func TestJSONShape(t *testing.T) {
	p := testPlan("p99 < 10ms", "loss_rate == 0")
	r := Evaluate(p, compile(t, p), fullStats(t))
	outs := outputs(t, r)
	if outs["json"] != outs["json file"] || !jsonEqual(t, outs["json"], outs["json.Marshal"]) {
		t.Error("WriteJSON, WriteJSONFile and json.Marshal disagree")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(outs["json"]), &doc); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"verdict", doc["verdict"], "FAIL"},
		{"durations are strings", doc["elapsed"], "11.7s"},
		{"plan durations too", dig(doc, "plan", "duration"), "10s"},
		{"metric durations too", dig(doc, "metrics", "top", "latency.p99"), "1.5ms"},
		{"counts are numbers", dig(doc, "metrics", "top", "sent"), 8000.0},
		{"group sets by name", dig(doc, "metrics", "groups", "pub", "received"), 7993.0},
		{"phase sets by name", dig(doc, "metrics", "phases", "connect", "connect.failed"), 1.0},
		{"absent metric left out", dig(doc, "metrics", "groups", "pub", "dup_rate"), nil},
		{"timeline durations", dig(doc, "timeline", 0, "p99"), "1.5ms"},
		{"broker", dig(doc, "broker", "messages_dropped"), 7.0},
		{"threshold expr", dig(doc, "thresholds", 1, "expr"), "loss_rate == 0"},
		{"threshold line", dig(doc, "thresholds", 1, "line"), 31.0},
		{"threshold value", dig(doc, "thresholds", 1, "values", 0, "value"), 0.00125},
		{"threshold reason", dig(doc, "thresholds", 1, "reason"), "false"},
		{"phase start", dig(doc, "phases", 4, "start"), "1.1s"},
		{"latency row", dig(doc, "latency", 0, "p999"), "2ms"},
		{"started", doc["started"], "2025-01-02T03:04:05Z"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}

	// An empty run: no samples are null/absent, lists are [] not null.
	e := Evaluate(testPlan("p99 < 10ms"), nil, emptyStats(t))
	var eb bytes.Buffer
	if err := WriteJSON(&eb, e); err != nil {
		t.Fatal(err)
	}
	var edoc map[string]any
	if err := json.Unmarshal(eb.Bytes(), &edoc); err != nil {
		t.Fatal(err)
	}
	if v, ok := edoc["timeline"].([]any); !ok || len(v) != 0 {
		t.Errorf("timeline = %#v, want []", edoc["timeline"])
	}
	if v := dig(edoc, "latency", 0, "p99"); v != nil {
		t.Errorf("latency without samples: p99 = %#v, want null", v)
	}
	if edoc["broker"] != nil {
		t.Errorf("broker = %#v, want null for an external broker", edoc["broker"])
	}
}

// jsonEqual compares two JSON texts by value: json.Marshal escapes < > &
// (the plan description has them) where WriteJSON keeps them legible.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// dig walks decoded JSON by keys and indexes; nil when absent.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestWriteJSONFile(t *testing.T) {
	r := Evaluate(testPlan(), nil, fullStats(t))
	var want bytes.Buffer
	if err := WriteJSON(&want, r); err != nil {
		t.Fatal(err)
	}

	t.Run("writes the whole report and nothing else", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.json")
		if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSONFile(path, r); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Error("file content differs from WriteJSON")
		}
		assertOnlyFile(t, dir, "out.json")
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("mode = %v (%v), want 0644", fi.Mode().Perm(), err)
		}
	})

	t.Run("a missing directory fails and leaves nothing", func(t *testing.T) {
		dir := t.TempDir()
		if err := WriteJSONFile(filepath.Join(dir, "no", "such", "out.json"), r); err == nil {
			t.Fatal("no error for a missing directory")
		}
		assertOnlyFile(t, dir)
	})

	t.Run("a failed rename leaves no temporary file", func(t *testing.T) {
		dir := t.TempDir()
		// A directory in the way makes the rename fail after the temporary
		// file was written.
		if err := os.Mkdir(filepath.Join(dir, "out.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "out.json", "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSONFile(filepath.Join(dir, "out.json"), r); err == nil {
			t.Fatal("no error when the target is a non-empty directory")
		}
		assertOnlyFile(t, dir, "out.json")
	})

	t.Run("readers see a whole report, old or new, never a torn one", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.json")
		if err := WriteJSONFile(path, r); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		var torn []string
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				b, err := os.ReadFile(path)
				if err != nil || !json.Valid(b) {
					torn = append(torn, string(b[:min(len(b), 40)]))
					return
				}
			}
		}()
		for i := 0; i < 20; i++ {
			if err := WriteJSONFile(path, r); err != nil {
				t.Fatal(err)
			}
		}
		close(done)
		wg.Wait()
		if len(torn) > 0 {
			t.Errorf("a reader saw a torn or missing report: %q", torn)
		}
		assertOnlyFile(t, dir, "out.json")
	})
}

// assertOnlyFile fails unless dir holds exactly the named entries (no
// temporary file left behind).
func assertOnlyFile(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}

// TestEvaluateNil checks that a missing plan or stats still reports
// (the CLI reports whatever it has when a run dies early).
func TestEvaluateNil(t *testing.T) {
	r := Evaluate(nil, nil, nil)
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict() != VerdictPass {
		t.Errorf("Verdict() = %q", r.Verdict())
	}
}

// TestJSONSecondMirrorsSecond keeps the JSON timeline in step with
// stats.Second and stats.GroupSecond: same field names, in the same order.
func TestJSONSecondMirrorsSecond(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stats, json reflect.Type
	}{
		{"second", reflect.TypeFor[stats.Second](), reflect.TypeFor[jsonSecond]()},
		{"group second", reflect.TypeFor[stats.GroupSecond](), reflect.TypeFor[jsonGroupSecond]()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.stats, tc.json
			if a.NumField() != b.NumField() {
				t.Fatalf("%s has %d fields, %s %d", a, a.NumField(), b, b.NumField())
			}
			for i := range a.NumField() {
				if a.Field(i).Name != b.Field(i).Name {
					t.Errorf("field %d: %s vs %s", i, a.Field(i).Name, b.Field(i).Name)
				}
			}
		})
	}
}

// TestJSONTimelineEmptySecond: a second, or a group's share of one,
// without latency samples has no latency figures (null), not a misleading
// 0s; that includes deliveries counted without a latency (Max 0). A
// second kept without groups has "groups": [], never null.
func TestJSONTimelineEmptySecond(t *testing.T) {
	r := &Result{Timeline: []stats.Second{
		{At: 1e9, Phase: phase.Connect},
		{At: 2e9, Phase: phase.Steady, Sent: 5, Received: 7, P50: 1e6, P99: 2e6, Max: 3e6, Groups: []stats.GroupSecond{
			{Group: "sub", Received: 5, P50: 1e6, P99: 2e6, Max: 3e6},
			{Group: "pub", Sent: 5},
			{Group: "late", Received: 2},
		}},
	}}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Timeline []struct {
			P50, Max any
			Groups   []map[string]any `json:"groups"`
		} `json:"timeline"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Timeline) != 2 {
		t.Fatalf("timeline %+v", doc.Timeline)
	}
	if s := doc.Timeline[0]; s.P50 != nil || s.Groups == nil || len(s.Groups) != 0 {
		t.Errorf("empty second: p50 %v, groups %#v", s.P50, s.Groups)
	}
	s := doc.Timeline[1]
	if s.P50 != "1ms" || s.Max != "3ms" || len(s.Groups) != 3 {
		t.Fatalf("second: p50 %v max %v groups %v", s.P50, s.Max, s.Groups)
	}
	for _, tc := range []struct {
		name     string
		p50, max any
	}{
		{"sub", "1ms", "3ms"},
		{"pub", nil, nil},
		{"late", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(s.Groups, func(g map[string]any) bool { return g["group"] == tc.name })
			if i < 0 {
				t.Fatalf("no group %q in %v", tc.name, s.Groups)
			}
			if g := s.Groups[i]; g["p50"] != tc.p50 || g["max"] != tc.max {
				t.Errorf("p50 %v max %v, want %v and %v", g["p50"], g["max"], tc.p50, tc.max)
			}
		})
	}
}

// TestJSONPlanMirrorsPlan keeps the plan echo's document types in step
// with the plan's: every field the plan marshals has its mirror, with the
// same JSON key and options, in the same order, so that a new plan field
// cannot silently go missing from the JSON report.
func TestJSONPlanMirrorsPlan(t *testing.T) {
	for _, tc := range []struct {
		name         string
		plan, mirror reflect.Type
	}{
		{"plan", reflect.TypeFor[plans.Plan](), reflect.TypeFor[jsonPlan]()},
		{"broker", reflect.TypeFor[plans.Broker](), reflect.TypeFor[jsonPlanBroker]()},
		{"group", reflect.TypeFor[plans.Group](), reflect.TypeFor[jsonPlanGroup]()},
		{"reconnect", reflect.TypeFor[plans.Reconnect](), reflect.TypeFor[jsonPlanReconnect]()},
		{"churn", reflect.TypeFor[plans.Churn](), reflect.TypeFor[jsonPlanChurn]()},
		{"publish", reflect.TypeFor[plans.Publish](), reflect.TypeFor[jsonPlanPublish]()},
		{"stage", reflect.TypeFor[plans.Stage](), reflect.TypeFor[jsonPlanStage]()},
		{"burst", reflect.TypeFor[plans.Burst](), reflect.TypeFor[jsonPlanBurst]()},
		{"start_delay", reflect.TypeFor[plans.StartDelay](), reflect.TypeFor[jsonPlanStartDelay]()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got []string
			for i := range tc.plan.NumField() {
				if f := tc.plan.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
					want = append(want, f.Name+" "+f.Tag.Get("json"))
				}
			}
			for i := range tc.mirror.NumField() {
				f := tc.mirror.Field(i)
				got = append(got, f.Name+" "+f.Tag.Get("json"))
			}
			if strings.Join(got, ", ") != strings.Join(want, ", ") {
				t.Errorf("mirror fields\n got %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
			}
		})
	}
}
