package live

import (
	"context"
	"math"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/runner"
	"github.com/mqplan/mqplan/stats"
	dto "github.com/prometheus/client_model/go"
)

// runPlan is a short QoS 1 run with every phase that publishes: one
// publishing and one subscribing group, phases of two seconds, on a broker that duplicates every
// 7th delivery, so that the duplicates counter has something to count.
const runPlan = `
name: live
broker: {url: embedded, connect_timeout: 5s}
groups:
  - name: sub
    count: 2
    subscribe: {topic: "live/%i", qos: 1}
  - name: pub
    count: 2
    publish: {topic: "live/%i", qos: 1, size: 64B, every: 20ms}
warmup: 2s
ramp: 1s
duration: 2s
drain: 2s
`

// liveRun runs runPlan on an embedded broker with faults, the exporter
// fed as cmd/mqplan feeds it (every runner hook), and gives each second
// and a scrape of the endpoint right after it to each (on the snapshot
// goroutine). It returns the run's statistics, the group names, and the
// endpoint's URL, still serving.
func liveRun(t *testing.T, faults broker.Faults, each func(s stats.Second, fams map[string]*dto.MetricFamily)) (*stats.Stats, []string, string) {
	t.Helper()
	plan, err := plans.LoadBytes("live.yaml", []byte(runPlan), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "live"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{prog.Groups[0].Name, prog.Groups[1].Name}
	x := New(names, Info{RunID: "test"})
	srv := httptest.NewServer(x.Handler())
	t.Cleanup(srv.Close)
	opts := runner.Options{
		Embedded: func() (runner.EmbeddedBroker, error) {
			return broker.Start(broker.Options{Faults: faults})
		},
		Latency:   x.ObserveLatency,
		Ack:       x.ObserveAck,
		LostSoFar: x.ObserveLost,
		// The hook runs on the snapshot goroutine, one second after the
		// other: the scrape here sees exactly the seconds so far.
		Second: func(s stats.Second) {
			x.Observe(s)
			each(s, scrape(t, srv.URL))
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := runner.Run(ctx, prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.Incomplete != "" {
		t.Fatalf("run incomplete: %s (%v)", st.Incomplete, st.ErrorSamples)
	}
	return st, names, srv.URL
}

// runLost is the run's lost deliveries to group g, all phases: what
// mqplan_messages_lost must say when the run is over.
func runLost(st *stats.Stats, g int) int64 {
	var n int64
	for p := range st.Phases {
		n += st.Phases[p].Groups[g].Lost
	}
	return n
}

// TestRunFeedsExporter runs a real plan with the exporter fed by the
// runner's hooks, scraping its endpoint after every second through the
// text parser: counters never go down, the phase gauge moves forward
// through the phases, nothing is lost so far on a broker that loses
// nothing, and when the run is over every group's counters equal the
// run's own totals exactly, and its histograms count every latency of
// the run.
func TestRunFeedsExporter(t *testing.T) {
	var phases []string
	latencies := 0 // seconds in which the sub group's p99 gauge showed a latency
	last := map[string]float64{}
	counters := []string{"mqplan_messages_sent_total", "mqplan_messages_acked_total", "mqplan_messages_received_total",
		"mqplan_messages_duplicated_total", "mqplan_errors_total", "mqplan_disconnects_total"}
	var names []string
	st, names, url := liveRun(t, broker.Faults{DuplicateEvery: 7},
		func(s stats.Second, fams map[string]*dto.MetricFamily) {
			names = []string{s.Groups[0].Group, s.Groups[1].Group}
			ph, err := currentPhase(fams)
			if err != nil {
				t.Error(err)
			}
			if len(phases) == 0 || phases[len(phases)-1] != ph {
				phases = append(phases, ph)
			}
			for g, name := range names {
				gs := s.Groups[g]
				for _, q := range []struct {
					quantile string
					want     time.Duration
				}{{"p50", gs.P50}, {"p99", gs.P99}, {"max", gs.Max}} {
					v, _ := sample(fams, "mqplan_latency_seconds", "group", name, "stat", q.quantile)
					if gs.Max == 0 && !math.IsNaN(v) || gs.Max != 0 && v != q.want.Seconds() {
						t.Errorf("mqplan_latency_seconds{group=%q,stat=%q} = %v, the second's is %v", name, q.quantile, v, q.want)
					}
				}
				if name == "sub" && gs.Max != 0 {
					latencies++
				}
			}
			for _, c := range counters {
				for _, g := range names {
					v, ok := sample(fams, c, "group", g)
					if !ok || v < last[c+g] {
						t.Errorf("%s{group=%q} = %v (present %v) after %v", c, g, v, ok, last[c+g])
					}
					last[c+g] = v
				}
			}
			// The broker loses nothing: whatever is in flight, and
			// however late, is not lost.
			for _, g := range names {
				if v, ok := sample(fams, "mqplan_messages_lost", "group", g); !ok || v != 0 {
					t.Errorf("%s: mqplan_messages_lost{group=%q} = %v (present %v) on a broker that loses nothing", s.Phase, g, v, ok)
				}
			}
		})

	// The phases seen, in order, are the run's, forward only, and include
	// those that last two seconds (a shorter one may fall between two
	// seconds of the timeline).
	order := func(name string) int {
		p, ok := phase.Parse(name)
		if !ok {
			t.Fatalf("phase gauge names %q", name)
		}
		return int(p)
	}
	for i := 1; i < len(phases); i++ {
		if order(phases[i]) <= order(phases[i-1]) {
			t.Errorf("phase gauge went %v: not forward", phases)
		}
	}
	for _, want := range []string{"warmup", "steady"} {
		if !slices.Contains(phases, want) {
			t.Errorf("phase gauge went %v, never %s", phases, want)
		}
	}

	t.Logf("phases seen: %v", phases)
	fams := scrape(t, url)
	for g, name := range names {
		var sent, acked, received, dups, errs, disc int64
		for p := range st.Phases {
			m := &st.Phases[p].Groups[g]
			sent += m.Sent
			acked += m.Acked
			received += m.Received
			dups += m.Duplicates
			errs += m.Errors
			disc += m.Disconnects
		}
		for _, c := range []struct {
			metric string
			want   int64
		}{
			{"mqplan_messages_sent_total", sent}, {"mqplan_messages_acked_total", acked},
			{"mqplan_messages_received_total", received}, {"mqplan_messages_duplicated_total", dups},
			{"mqplan_errors_total", errs}, {"mqplan_disconnects_total", disc},
		} {
			got, _ := sample(fams, c.metric, "group", name)
			if got != float64(c.want) {
				t.Errorf("%s{group=%q} = %v at the end, the run's total is %d", c.metric, name, got, c.want)
			}
		}
		var samples, acks int64
		for p := range st.Phases {
			if h := st.Phases[p].Groups[g].Latency; h != nil {
				samples += h.TotalCount()
			}
			if h := st.Phases[p].Groups[g].Ack; h != nil {
				acks += h.TotalCount()
			}
		}
		if h := histogram(fams, "mqplan_ack_latency_seconds", name); h == nil || h.GetSampleCount() != uint64(acks) ||
			name == "pub" && (acks == 0 || bucketCounts(h)[10] != uint64(acks)) {
			t.Errorf("mqplan_ack_latency_seconds{group=%q}: %v, the run has %d ack latencies", name, h, acks)
		}
		if got, _ := sample(fams, "mqplan_messages_lost", "group", name); got != float64(runLost(st, g)) {
			t.Errorf("mqplan_messages_lost{group=%q} = %v at the end, the run lost %d", name, got, runLost(st, g))
		}
		if h := histogram(fams, "mqplan_e2e_latency_seconds", name); h == nil || h.GetSampleCount() != uint64(samples) {
			t.Errorf("mqplan_e2e_latency_seconds{group=%q}: %v, the run has %d latency samples", name, h, samples)
		} else if b := bucketCounts(h); b[10] != uint64(samples) || name == "sub" && (samples == 0 || b[0.0001] > b[0.001]) {
			t.Errorf("mqplan_e2e_latency_seconds{group=%q} buckets %v for %d samples", name, b, samples)
		}
		if got, _ := sample(fams, "mqplan_clients_connected", "group", name); got != float64(st.Groups[g].ConnectedAtEnd) &&
			got != float64(st.Groups[g].Clients) {
			t.Errorf("mqplan_clients_connected{group=%q} = %v, want %d", name, got, st.Groups[g].Clients)
		}
	}
	// The run did what the counters are meant to show.
	if v, _ := sample(fams, "mqplan_messages_sent_total", "group", "pub"); v < 50 {
		t.Errorf("pub sent %v, want a real run's worth", v)
	}
	if v, _ := sample(fams, "mqplan_messages_duplicated_total", "group", "sub"); v == 0 {
		t.Errorf("no duplicates counted on a broker that duplicates every 7th delivery")
	}
	if v, _ := sample(fams, "mqplan_messages_acked_total", "group", "pub"); v == 0 {
		t.Errorf("no acks counted for QoS 1 publishes")
	}
	if latencies == 0 {
		t.Errorf("the sub group's latency gauge never showed a latency")
	}
	// What Prometheus' own checker says of a real run's scrape.
	promtoolCheck(t, url)
}

// TestRunLostSoFar runs the plan on a broker that drops every 10th
// delivery and holds every other for 1s (half the plan's 2s drain):
// mqplan_messages_lost shows losses while the run goes, never more than
// the run ends with (a delivery merely held is never counted), and when
// the run is over it is exactly the run's lost deliveries to each group.
func TestRunLostSoFar(t *testing.T) {
	var seen []map[string]float64 // per second: group → lost so far
	var phases []phase.Phase
	st, names, url := liveRun(t, broker.Faults{DropEvery: 10, Delay: time.Second},
		func(s stats.Second, fams map[string]*dto.MetricFamily) {
			m := map[string]float64{}
			for _, g := range s.Groups {
				v, ok := sample(fams, "mqplan_messages_lost", "group", g.Group)
				if !ok {
					t.Errorf("no mqplan_messages_lost{group=%q}", g.Group)
				}
				m[g.Group] = v
			}
			seen = append(seen, m)
			phases = append(phases, s.Phase)
		})
	fams := scrape(t, url)
	for g, name := range names {
		want := runLost(st, g)
		if got, _ := sample(fams, "mqplan_messages_lost", "group", name); got != float64(want) {
			t.Errorf("mqplan_messages_lost{group=%q} = %v at the end, the run lost %d", name, got, want)
		}
		for i, m := range seen {
			if m[name] > float64(want) {
				t.Errorf("second %d (%s): mqplan_messages_lost{group=%q} = %v, more than the %d the run lost", i+1, phases[i], name, m[name], want)
			}
		}
	}
	if runLost(st, 0) == 0 {
		t.Fatalf("the sub group lost nothing on a broker dropping every 10th delivery")
	}
	// Losses show before the run is over: in some second before the
	// last (the one taken when the run has ended).
	live := false
	for _, m := range seen[:len(seen)-1] {
		live = live || m["sub"] > 0
	}
	if !live {
		t.Errorf("mqplan_messages_lost{group=\"sub\"} stayed 0 until the run was over: %v", seen)
	}
	t.Logf("lost so far, each second: %v; the run lost %d", seen, runLost(st, 0))
}
