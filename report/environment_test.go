package report

import (
	"bytes"
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/threshold"
)

// kindType is the Go type each metric kind promises (metric.Kind).
var kindType = map[metric.Kind]reflect.Type{
	metric.Count:    reflect.TypeFor[int](),
	metric.Rate:     reflect.TypeFor[float64](),
	metric.Fraction: reflect.TypeFor[float64](),
	metric.Duration: reflect.TypeFor[time.Duration](),
}

// TestEnvironmentCatalogue checks that a fully populated run produces every
// catalogue metric at the top level and in the steady phase, each with its
// kind's Go type, so that a metric added to the catalogue cannot be
// forgotten here (a threshold on it would fail as "no samples" forever).
func TestEnvironmentCatalogue(t *testing.T) {
	st := withRequests(t, fullStats(t))
	for i := range st.Timeline {
		// mqplan's own disturbance, measured on Linux only.
		st.Timeline[i].Gen = stats.GenSecond{Sampled: true, Wait: 30 * time.Millisecond, Busy: 0.2}
	}
	m := Environment(testPlan(), st)
	scopes := []struct {
		name string
		set  metric.Set
	}{
		{"top", m.Top},
		{"phases.steady+connect", mergeSets(m.Phases["steady"], m.Phases["connect"], m.Phases["subscribe"])},
	}
	for _, sc := range scopes {
		t.Run(sc.name, func(t *testing.T) {
			for _, md := range metric.All() {
				if fam, _, _ := md.Name.Split(); sc.name != "top" && (fam == "broker" || fam == "self" || fam == "clock") {
					continue // processes are measured over the whole run only
				}
				if fam, _, _ := md.Name.Split(); fam == "churn" {
					continue // only in a plan that churns: TestEnvironmentChurn
				}
				if fam, _, _ := md.Name.Split(); fam == "latency_cross" {
					continue // only in a sharded run: TestEnvironmentClock
				}
				v, ok := sc.set[md.Name]
				if !ok {
					t.Errorf("%s: missing", md.Name)
					continue
				}
				if got, want := reflect.TypeOf(v), kindType[md.Kind]; got != want {
					t.Errorf("%s (%s): type %v, want %v", md.Name, md.Kind, got, want)
				}
			}
		})
	}
	// Every set, of every scope, holds only catalogue names with the right
	// types, even when sparse.
	all := map[string]metric.Set{"top": m.Top}
	for n, s := range m.Groups {
		all["groups."+n] = s
	}
	for n, s := range m.Phases {
		all["phases."+n] = s
	}
	for scope, set := range all {
		for name, v := range set {
			md, ok := metric.Lookup(string(name))
			if !ok || md.Name != name {
				t.Errorf("%s.%s: not a canonical catalogue name", scope, name)
				continue
			}
			if got, want := reflect.TypeOf(v), kindType[md.Kind]; got != want {
				t.Errorf("%s.%s: type %v, want %v", scope, name, got, want)
			}
		}
	}
	if len(m.Phases) != phase.Count {
		t.Errorf("phases: got %d sets, want one per phase (%d)", len(m.Phases), phase.Count)
	}
}

// mergeSets overlays sets; the phase test needs connect figures (from the
// connect phase) and message figures (from steady) to see every name.
func mergeSets(sets ...metric.Set) metric.Set {
	out := metric.Set{}
	for _, s := range sets {
		for k, v := range s {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out
}

// lookup reads scope.metric from m, the way a threshold names it.
func lookup(m threshold.Measured, scope, name, metricName string) (any, bool) {
	var set metric.Set
	switch scope {
	case "":
		set = m.Top
	case "groups":
		set = m.Groups[name]
	case "phases":
		set = m.Phases[name]
	}
	v, ok := set[metric.Name(metricName)]
	return v, ok
}

func TestEnvironmentValues(t *testing.T) {
	m := Environment(testPlan(), fullStats(t))
	ms := time.Millisecond
	us := time.Microsecond
	tests := []struct {
		name                 string
		scope, group, metric string
		want                 any
	}{
		// Top level: steady messages.
		{"sent", "", "", "sent", 8000},
		{"acked", "", "", "acked", 7998},
		{"expected", "", "", "expected", 8000},
		{"received counts duplicates", "", "", "received", 7993},
		{"lost", "", "", "lost", 10},
		{"duplicates", "", "", "duplicates", 3},
		{"out of order", "", "", "out_of_order", 2},
		{"corrupted", "", "", "corrupted", 1},
		{"bytes sent", "", "", "sent_bytes", 8_000_000},
		{"bytes received", "", "", "received_bytes", 7_993_000},
		{"loss rate = lost/expected", "", "", "loss_rate", 10.0 / 8000},
		{"dup rate = duplicates/received", "", "", "dup_rate", 3.0 / 7993},
		{"ooo rate = out_of_order/received", "", "", "ooo_rate", 2.0 / 7993},
		{"late rate = late/sent", "", "", "late_rate", 200.0 / 8000},
		{"send rate over steady's 10s", "", "", "send_rate", 800.0},
		{"recv rate over steady's 10s", "", "", "recv_rate", 799.3},
		{"latency min", "", "", "latency.min", 1000 * us},
		{"latency p50", "", "", "latency.p50", 1000 * us},
		{"latency p90", "", "", "latency.p90", 1000 * us},
		{"latency p99 takes a percent", "", "", "latency.p99", 1500 * us},
		{"latency p999 is 99.9", "", "", "latency.p999", 2000 * us},
		{"latency max", "", "", "latency.max", 2 * ms},
		{"latency mean keeps sub-µs", "", "", "latency.mean", time.Duration(math.Round((7900*1000 + 83*1500 + 10*2000) / 7993.0 * 1000))},
		{"ack p99", "", "", "ack.p99", 700 * us},
		{"lag p99", "", "", "lag.p99", 1200 * us},
		{"lag max", "", "", "lag.max", 1200 * us},
		// Top level: the whole run's connections.
		{"connect attempts over the run", "", "", "connect.attempts", 9},
		{"connect ok over the run", "", "", "connect.ok", 8},
		{"connect failed seen from steady's top", "", "", "connect.failed", 1},
		{"connect max", "", "", "connect.max", 900 * us},
		{"connect p50", "", "", "connect.p50", 600 * us},
		{"subscribe max", "", "", "subscribe.max", 400 * us},
		{"subscribe p99", "", "", "subscribe.p99", 400 * us},
		{"errors over the run", "", "", "errors", 3},
		{"disconnects over the run", "", "", "disconnects", 1},
		{"reconnects over the run", "", "", "reconnects", 1},
		// Groups.
		{"subscriber: expected deliveries to it", "groups", "sub", "expected", 8000},
		{"subscriber: received", "groups", "sub", "received", 7993},
		{"subscriber: sent nothing", "groups", "sub", "sent", 0},
		{"subscriber: recv rate", "groups", "sub", "recv_rate", 799.3},
		{"subscriber: send rate 0, not absent", "groups", "sub", "send_rate", 0.0},
		{"subscriber: latency", "groups", "sub", "latency.p99", 1500 * us},
		{"subscriber: its connections", "groups", "sub", "connect.attempts", 4},
		{"subscriber: no failed connect", "groups", "sub", "connect.failed", 0},
		{"publisher: expected deliveries of its messages", "groups", "pub", "expected", 8000},
		{"publisher: received = deliveries of its messages", "groups", "pub", "received", 7993},
		{"publisher: lost = its messages lost", "groups", "pub", "lost", 10},
		{"publisher: loss rate", "groups", "pub", "loss_rate", 10.0 / 8000},
		{"publisher: recv rate of its messages", "groups", "pub", "recv_rate", 799.3},
		{"publisher: send rate", "groups", "pub", "send_rate", 800.0},
		{"publisher: failed connect", "groups", "pub", "connect.failed", 1},
		{"publisher: late rate", "groups", "pub", "late_rate", 0.025},
		// Phases: their own figures.
		{"connect phase: failed", "phases", "connect", "connect.failed", 1},
		{"connect phase: sent nothing", "phases", "connect", "sent", 0},
		{"steady phase: no connects", "phases", "steady", "connect.attempts", 0},
		{"steady phase: errors of steady only", "phases", "steady", "errors", 2},
		{"steady phase: p99", "phases", "steady", "latency.p99", 1500 * us},
		{"subscribe phase: subscribe max", "phases", "subscribe", "subscribe.max", 400 * us},
		{"warmup never ran: counts 0", "phases", "warmup", "sent", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := lookup(m, tc.scope, tc.group, tc.metric)
			if !ok {
				t.Fatalf("%s %s %s: absent, want %v", tc.scope, tc.group, tc.metric, tc.want)
			}
			if f, isF := tc.want.(float64); isF {
				g, ok := got.(float64)
				if !ok || math.Abs(g-f) > 1e-9 {
					t.Fatalf("got %#v, want %v", got, f)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

// TestEnvironmentMissing checks that what was not measured is absent (so a
// threshold on it fails) while counts stay present as real zeros.
func TestEnvironmentMissing(t *testing.T) {
	full := Environment(testPlan(), fullStats(t))
	empty := Environment(testPlan(), emptyStats(t))
	tests := []struct {
		name                 string
		m                    threshold.Measured
		scope, group, metric string
		present              bool
	}{
		{"no run: sent is a real 0", empty, "", "", "sent", true},
		{"no run: connect.failed is a real 0", empty, "", "", "connect.failed", true},
		{"no run: no latency", empty, "", "", "latency.p99", false},
		{"no run: no loss rate without expectations", empty, "", "", "loss_rate", false},
		{"no run: no dup rate without deliveries", empty, "", "", "dup_rate", false},
		{"no run: no late rate without sends", empty, "", "", "late_rate", false},
		{"no run: no send rate over no time", empty, "", "", "send_rate", false},
		{"no run: no connect latency", empty, "", "", "connect.p99", false},
		{"no run: groups still have counts", empty, "groups", "sub", "received", true},
		{"no run: every phase has counts", empty, "phases", "drain", "received", true},
		{"zero-length phase: no rate", full, "phases", "warmup", "send_rate", false},
		{"zero-length phase: counts", full, "phases", "warmup", "sent", true},
		{"publisher: no latency of its own deliveries", full, "groups", "pub", "latency.p99", false},
		{"publisher: no dup rate (nothing delivered to it)", full, "groups", "pub", "dup_rate", false},
		{"subscriber: no ack latency", full, "groups", "sub", "ack.p99", false},
		{"subscriber: no late rate (sends nothing)", full, "groups", "sub", "late_rate", false},
		{"drain: no subscribe latency", full, "phases", "drain", "subscribe.max", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := lookup(tc.m, tc.scope, tc.group, tc.metric)
			if ok != tc.present {
				t.Fatalf("present = %v (value %#v), want %v", ok, v, tc.present)
			}
		})
	}
}

// TestGroupSemantics pins which figures a group's delivery metrics count.
func TestGroupSemantics(t *testing.T) {
	steady := stats.Metrics{
		Expected: 5, Received: 4, Lost: 1,
		ExpectedOwn: 50, ReceivedOwn: 40, LostOwn: 10,
		Sent: 100,
	}
	pub := &plans.Publish{Topic: plans.MustTemplate("t"), QoS: 1, Size: 16, Rate: 10}
	sub := []plans.Subscription{{Topic: plans.MustTemplate("t"), QoS: 1}}
	tests := []struct {
		name                     string
		group                    plans.Group
		expected, received, lost int
	}{
		{"pure subscriber: deliveries to it", plans.Group{Name: "g", Count: 1, Subscribe: sub}, 5, 4, 1},
		{"pure publisher: deliveries of its messages", plans.Group{Name: "g", Count: 1, Publish: pub}, 50, 40, 10},
		{"publishes and subscribes: deliveries to it", plans.Group{Name: "g", Count: 1, Publish: pub, Subscribe: sub}, 5, 4, 1},
		{"neither: deliveries to it (none)", plans.Group{Name: "g", Count: 1}, 5, 4, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &plans.Plan{Name: "x", Groups: []plans.Group{tc.group}}
			phases := phasesAt()
			for i := range phases {
				if phases[i].Phase == phase.Steady {
					phases[i].Groups = []stats.Metrics{steady}
					phases[i].Total = steady
				}
			}
			set := Environment(p, &stats.Stats{Phases: phases}).Groups["g"]
			got := [3]any{set["expected"], set["received"], set["lost"]}
			want := [3]any{tc.expected, tc.received, tc.lost}
			if got != want {
				t.Fatalf("expected, received, lost = %v, want %v", got, want)
			}
			if got, want := set["loss_rate"], float64(tc.lost)/float64(tc.expected); got != want {
				t.Errorf("loss_rate = %v, want %v", got, want)
			}
		})
	}
}

// TestEnvironmentDoesNotMutate makes sure that building the environment
// (which merges histograms across phases) leaves the run's own stats alone:
// the CLI may write several reports from one Stats.
func TestEnvironmentDoesNotMutate(t *testing.T) {
	st := fullStats(t)
	before := fmt.Sprint(st.Phase(phase.Connect).Total.Connect.TotalCount(), st.Phase(phase.Steady).Total.Latency.TotalCount())
	Environment(testPlan(), st)
	Evaluate(testPlan(), nil, st)
	after := fmt.Sprint(st.Phase(phase.Connect).Total.Connect.TotalCount(), st.Phase(phase.Steady).Total.Latency.TotalCount())
	if before != after {
		t.Fatalf("histogram counts changed: %s -> %s", before, after)
	}
}

func TestFormat(t *testing.T) {
	us, ms := time.Microsecond, time.Millisecond
	durations := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{500 * time.Nanosecond, "500ns"},
		{850 * us, "850µs"},
		{1 * us, "1µs"},
		{1500 * time.Nanosecond, "1.5µs"},
		{1234567 * time.Nanosecond, "1.23ms"},
		{12345 * us, "12.3ms"},
		{999 * ms, "999ms"},
		{2100 * ms, "2.1s"},
		{2 * time.Second, "2s"},
		{90 * time.Second, "1m30s"},
	}
	for _, tc := range durations {
		if got := fmtDuration(tc.in); got != tc.want {
			t.Errorf("fmtDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	percents := []struct {
		in   float64
		want string
	}{
		{0, "0%"},
		{0.025, "2.5%"},
		{1, "100%"},
		{1e-6, "0.0001%"}, // one in a million never shows as 0%
		{3.0 / 7993, "0.0375%"},
	}
	for _, tc := range percents {
		if got := fmtPercent(tc.in); got != tc.want {
			t.Errorf("fmtPercent(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	values := []struct {
		in   any
		want string
	}{
		{nil, "-"},
		{0, "0"},
		{0.001, "0.001"},
		{799.3, "799.3"},
		{123456.7, "123457"},
		{0.0003753, "0.0003753"},
		{1500 * us, "1.5ms"},
	}
	for _, tc := range values {
		if got := fmtValue(tc.in); got != tc.want {
			t.Errorf("fmtValue(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	sizes := []struct {
		in   int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1 << 20, "1.0 MiB"},
		{2 << 30, "2048.0 MiB"},
	}
	for _, tc := range sizes {
		if got := fmtBytes(tc.in); got != tc.want {
			t.Errorf("fmtBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestListenOnlyRates checks that a plan without publishers (mqplan sub)
// has its rates over the window in which its deliveries arrived, not over
// a steady phase spent mostly waiting, and that every other plan keeps
// steady-phase rates. The fixture's steady phase lasts 10s; the
// deliveries arrived within one second of it.
func TestListenOnlyRates(t *testing.T) {
	s := time.Second
	pub := &plans.Publish{Topic: plans.MustTemplate("t"), QoS: 1, Size: 16, Rate: 10}
	sub := []plans.Subscription{{Topic: plans.MustTemplate("t"), QoS: 1}}
	tests := []struct {
		name        string
		group       plans.Group
		steady      stats.Metrics
		recvRate    float64
		sendRate    float64
		rateWindow  time.Duration
		tableHeader string
	}{
		{name: "sub: over the delivery window", group: plans.Group{Name: "g", Count: 2, Subscribe: sub},
			steady:   stats.Metrics{Received: 20000, FirstReceived: 3 * s, LastReceived: 4 * s},
			recvRate: 20000, rateWindow: s, tableHeader: "rates: over the 1s from first to last delivery"},
		{name: "sub: one delivery has no window, steady phase", group: plans.Group{Name: "g", Count: 2, Subscribe: sub},
			steady:   stats.Metrics{Received: 1, FirstReceived: 3 * s, LastReceived: 3 * s},
			recvRate: 0.1},
		{name: "sub: nothing received, steady phase", group: plans.Group{Name: "g", Count: 2, Subscribe: sub},
			recvRate: 0},
		{name: "pub and sub: steady phase", group: plans.Group{Name: "g", Count: 2, Publish: pub, Subscribe: sub},
			steady:   stats.Metrics{Sent: 20000, Received: 20000, FirstReceived: 3 * s, LastReceived: 4 * s},
			recvRate: 2000, sendRate: 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plans.Plan{Name: "x", Groups: []plans.Group{tt.group}}
			phases := phasesAt()
			for i := range phases {
				if phases[i].Phase == phase.Steady {
					phases[i].Groups = []stats.Metrics{tt.steady}
					phases[i].Total = tt.steady
				}
			}
			r := Evaluate(p, nil, &stats.Stats{Phases: phases, Elapsed: 12 * s})
			for scope, set := range map[string]metric.Set{"top": r.Measured.Top, "groups.g": r.Measured.Groups["g"]} {
				if got := set["recv_rate"]; got != tt.recvRate {
					t.Errorf("%s recv_rate = %v, want %v", scope, got, tt.recvRate)
				}
				if got := set["send_rate"]; got != tt.sendRate {
					t.Errorf("%s send_rate = %v, want %v", scope, got, tt.sendRate)
				}
			}
			if got := r.Measured.Phases["steady"]["recv_rate"]; got != float64(tt.steady.Received)/10 {
				t.Errorf("phases.steady recv_rate = %v, want it over the phase's 10s", got)
			}
			if r.RateWindow != tt.rateWindow {
				t.Errorf("RateWindow = %v, want %v", r.RateWindow, tt.rateWindow)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, r); err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(b.String(), "from first to last delivery"); has != (tt.tableHeader != "") || !strings.Contains(b.String(), tt.tableHeader) {
				t.Errorf("table's Groups title does not say %q:\n%s", tt.tableHeader, b.String())
			}
			var js bytes.Buffer
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`"rate_window":%q`, tt.rateWindow.String()); !strings.Contains(strings.ReplaceAll(js.String(), `": `, `":`), want) {
				t.Errorf("JSON lacks %s", want)
			}
		})
	}
}

// TestBrokerCountersUnchanged: a cumulative counter in neither reading
// but known unchanged (stats.Stats.CountersUnchanged) measures 0, so a
// threshold on it is judged, and the Broker section says why it has no
// start or end, also once the result is saved and read back; a small
// memory figure shows in bytes or KiB, its change never as -0.0.
func TestBrokerCountersUnchanged(t *testing.T) {
	p := testPlan("broker.dropped == 0")
	st := fullStats(t)
	st.CountersStart.Drop(brokerstat.Dropped)
	st.CountersEnd.Drop(brokerstat.Dropped)
	st.CountersStart.Put(brokerstat.MemoryBytes, 300<<10)
	st.CountersEnd.Put(brokerstat.MemoryBytes, 300<<10-10)
	st.CountersUnchanged = []brokerstat.Counter{brokerstat.Dropped}
	r := Evaluate(p, compile(t, p), st)
	if v, ok := r.Measured.Top[metric.BrokerDropped]; !ok || v != 0 {
		t.Fatalf("broker.dropped %v (%v), want 0", v, ok)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range map[string]*Result{"run": r, "read back": back} {
		var b bytes.Buffer
		if err := WriteTable(&b, res); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"+0 (not republished)", "300.0 KiB", "-10 B"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the table lacks %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "-0.0") {
			t.Errorf("%s: the table shows -0.0:\n%s", name, out)
		}
	}
}

// TestEnvironmentChurn: the churn.* counts are measured in a plan that
// churns (at the top, in the phases and for the churning group) and
// absent elsewhere, so a threshold on them in a plan without churn fails
// rather than reading a made-up zero.
func TestEnvironmentChurn(t *testing.T) {
	st := fullStats(t)
	for _, tc := range []struct {
		name   string
		churns bool
	}{
		{name: "a plan without churn has no churn.*"},
		{name: "a plan with churn has them", churns: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan()
			if tc.churns {
				p.Groups[0].Churn = &plans.Churn{Lifetime: time.Second}
			}
			for _, clean := range []bool{false, true} {
				p.Groups[0].CleanStart = clean
				m := Environment(p, st)
				for _, name := range []metric.Name{metric.ChurnDisconnects, metric.ChurnReconnects, metric.ChurnAmbiguous, metric.ChurnAmbiguousReceived} {
					// churn.ambiguous* only where a subscribing group
					// churns with a clean session.
					want := tc.churns && (clean || !strings.HasPrefix(string(name), "churn.ambiguous"))
					_, top := m.Top[name]
					_, steady := m.Phases["steady"][name]
					_, sub := m.Groups["sub"][name]
					_, pub := m.Groups["pub"][name]
					if top != want || steady != want || sub != want || pub {
						t.Errorf("clean %v: %s present: top %v, steady %v, group sub %v, group pub %v", clean, name, top, steady, sub, pub)
					}
				}
			}
		})
	}
}
