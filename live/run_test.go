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

// TestRunFeedsExporter runs a real plan with the exporter fed by
// runner.Options.Second, scraping its endpoint after every second through
// the text parser: counters never go down, the phase gauge moves forward
// through the phases, and when the run is over every group's counters
// equal the run's own totals exactly.
func TestRunFeedsExporter(t *testing.T) {
	plan, err := plans.LoadBytes("live.yaml", []byte(runPlan), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: "live"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{prog.Groups[0].Name, prog.Groups[1].Name}
	x := New(names)
	srv := httptest.NewServer(x.Handler())
	defer srv.Close()

	var phases []string
	latencies := 0 // seconds in which the sub group's p99 gauge showed a latency
	last := map[string]float64{}
	counters := []string{"mqplan_messages_sent_total", "mqplan_messages_acked_total", "mqplan_messages_received_total",
		"mqplan_messages_duplicated_total", "mqplan_errors_total", "mqplan_disconnects_total"}
	opts := runner.Options{
		Embedded: func() (runner.EmbeddedBroker, error) {
			return broker.Start(broker.Options{Faults: broker.Faults{DuplicateEvery: 7}})
		},
		Latency: x.ObserveLatency,
		// The hook runs on the snapshot goroutine, one second after the
		// other: the scrape here sees exactly the seconds so far.
		Second: func(s stats.Second) {
			x.Observe(s)
			fams := scrape(t, srv.URL)
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
				}{{"0.5", gs.P50}, {"0.99", gs.P99}, {"1", gs.Max}} {
					v, _ := sample(fams, "mqplan_latency_seconds", "group", name, "quantile", q.quantile)
					if gs.Max == 0 && !math.IsNaN(v) || gs.Max != 0 && v != q.want.Seconds() {
						t.Errorf("mqplan_latency_seconds{group=%q,quantile=%q} = %v, the second's is %v", name, q.quantile, v, q.want)
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
	fams := scrape(t, srv.URL)
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
		var samples int64
		for p := range st.Phases {
			if h := st.Phases[p].Groups[g].Latency; h != nil {
				samples += h.TotalCount()
			}
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
}
