package runner

import (
	"context"
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"errors"

	"github.com/HdrHistogram/hdrhistogram-go"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/plans"
)

// e2ePlan is a small 1-to-1 plan: n publishers and n subscribers, each
// pair on its own topic, every 20 ms, for the given steady time.
func e2ePlan(n int, qos byte, steady time.Duration) *plans.Plan {
	return &plans.Plan{
		File:   "e2e.yaml",
		Name:   "e2e",
		Broker: plans.Broker{URLs: []string{plans.Embedded}, Protocol: 5, ConnectTimeout: 5 * time.Second},
		Groups: []plans.Group{
			{Name: "sub", Count: n, Start: 1, Keepalive: 60 * time.Second, CleanStart: true, ConnectRate: 1000,
				Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("e2e/%i"), QoS: qos}}},
			{Name: "pub", Count: n, Start: 1, Keepalive: 60 * time.Second, CleanStart: true, ConnectRate: 1000,
				Publish: &plans.Publish{Topic: plans.MustTemplate("e2e/%i"), QoS: qos, Size: 200, Every: 20 * time.Millisecond}},
		},
		Warmup:   200 * time.Millisecond,
		Duration: steady,
		Drain:    5 * time.Second,
	}
}

func compile(t *testing.T, p *plans.Plan) *plans.Program {
	t.Helper()
	prog, err := plans.Compile(p, plans.CompileOptions{RunID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// runWith runs prog against a broker started with opts and returns the
// stats and the broker, still open so that its counters can be read.
func runWith(t *testing.T, prog *plans.Program, bo broker.Options, o Options, started ...func(*broker.Broker)) (*stats.Stats, *broker.Broker) {
	t.Helper()
	b, err := broker.Start(bo)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range started {
		f(b)
	}
	t.Cleanup(func() { _ = b.Close(5 * time.Second) })
	o.BrokerURL = b.URL()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Run(ctx, prog, o)
	if err != nil {
		t.Fatal(err)
	}
	return st, b
}

// runAt runs prog against the broker at url, bounded by a minute, and
// returns the stats and every phase merged.
func runAt(t *testing.T, prog *plans.Program, url string) (*stats.Stats, stats.Metrics) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Run(ctx, prog, Options{BrokerURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return st, all(st)
}

// planned is the number of messages prog's schedules send.
func planned(prog *plans.Program) int64 {
	n := int64(0)
	for _, ph := range prog.Phases {
		n += ph.Messages
	}
	return n
}

// all merges every phase.
func all(st *stats.Stats) stats.Metrics {
	var m stats.Metrics
	for i := range st.Phases {
		m.Merge(&st.Phases[i].Total)
	}
	return m
}

// checkTimeline checks that st's timeline accounts exactly: in every
// second the groups add up to the second's totals, and over the run each
// group's seconds add up to that group's figures over every phase (acks
// and duplicates included, which the timeline keeps per group only).
func checkTimeline(t *testing.T, st *stats.Stats) {
	t.Helper()
	type counts struct{ sent, received, errors, disconnects, acked, duplicates int64 }
	perGroup := make([]counts, len(st.Groups))
	for _, s := range st.Timeline {
		if len(s.Groups) != len(st.Groups) {
			t.Fatalf("second at %v has %d groups, the run %d", s.At, len(s.Groups), len(st.Groups))
		}
		var sum stats.GroupSecond
		for g, gs := range s.Groups {
			if gs.Group != st.Groups[g].Name {
				t.Errorf("second at %v: group %d is %q, want %q", s.At, g, gs.Group, st.Groups[g].Name)
			}
			if (gs.Max == 0) != (gs.P50 == 0) || gs.P50 > gs.P99 || gs.P99 > gs.Max {
				t.Errorf("second at %v, group %s: p50 %v p99 %v max %v", s.At, gs.Group, gs.P50, gs.P99, gs.Max)
			}
			sum.Sent += gs.Sent
			sum.Received += gs.Received
			sum.Errors += gs.Errors
			sum.Disconnects += gs.Disconnects
			sum.Connected += gs.Connected
			sum.Lost += gs.Lost
			sum.Max = max(sum.Max, gs.Max)
			sum.LagMax = max(sum.LagMax, gs.LagMax)
			c := &perGroup[g]
			c.sent, c.received, c.errors, c.disconnects = c.sent+gs.Sent, c.received+gs.Received, c.errors+gs.Errors, c.disconnects+gs.Disconnects
			c.acked, c.duplicates = c.acked+gs.Acked, c.duplicates+gs.Duplicates
		}
		want := stats.GroupSecond{Connected: s.Connected, Lost: s.Lost, Sent: s.Sent, Received: s.Received,
			Errors: s.Errors, Disconnects: s.Disconnects, Max: s.Max, LagMax: s.LagMax}
		if sum != want {
			t.Errorf("second at %v: groups add up to %+v, the second says %+v", s.At, sum, want)
		}
	}
	for g := range st.Groups {
		var m stats.Metrics
		for i := range st.Phases {
			m.Merge(&st.Phases[i].Groups[g])
		}
		want := counts{m.Sent, m.Received, m.Errors, m.Disconnects, m.Acked, m.Duplicates}
		if perGroup[g] != want {
			t.Errorf("group %s: the timeline adds up to %+v, the run's figures are %+v", st.Groups[g].Name, perGroup[g], want)
		}
	}
}

func TestRunExactAccounting(t *testing.T) {
	for _, qos := range []byte{0, 1, 2} {
		t.Run("qos"+string('0'+qos), func(t *testing.T) {
			prog := compile(t, e2ePlan(5, qos, time.Second))
			st, b := runWith(t, prog, broker.Options{}, Options{})
			if st.Incomplete != "" || st.Interrupted {
				t.Fatalf("incomplete: %q interrupted=%v errors=%v", st.Incomplete, st.Interrupted, st.ErrorSamples)
			}
			m := all(st)
			want := int64(0)
			for _, ph := range prog.Phases {
				want += ph.Messages
			}
			if m.Sent != want || m.Expected != want || m.Received != want {
				t.Errorf("sent %d expected %d received %d, want %d each", m.Sent, m.Expected, m.Received, want)
			}
			if m.Lost != 0 || m.Duplicates != 0 || m.OutOfOrder != 0 || m.Corrupted != 0 || m.Errors != 0 {
				t.Errorf("lost %d dup %d ooo %d corrupt %d errors %d (%v)", m.Lost, m.Duplicates, m.OutOfOrder, m.Corrupted, m.Errors, st.ErrorSamples)
			}
			if qos > 0 && m.Acked != m.Sent {
				t.Errorf("acked %d of %d", m.Acked, m.Sent)
			}
			if qos > 0 && (m.Ack == nil || m.Ack.TotalCount() != m.Sent) {
				t.Errorf("ack latency histogram missing or short")
			}
			if m.Latency == nil || m.Latency.TotalCount() != m.Received {
				t.Errorf("latency histogram has %v samples, want %d", m.Latency, m.Received)
			}
			if m.ConnectOK != 10 || m.ConnectFailed != 0 || m.Connect.TotalCount() != 10 {
				t.Errorf("connect ok %d failed %d", m.ConnectOK, m.ConnectFailed)
			}
			if m.Subscribe == nil || m.Subscribe.TotalCount() != 5 {
				t.Errorf("subscribe latency samples: %v", m.Subscribe)
			}
			// Broker-side counters agree with mqplan's.
			bs := b.Stats()
			if bs.MessagesReceived != m.Sent || bs.MessagesSent != m.Received {
				t.Errorf("broker received %d sent %d; mqplan sent %d received %d", bs.MessagesReceived, bs.MessagesSent, m.Sent, m.Received)
			}
			// The steady phase's messages are attributed to steady and to
			// the right groups.
			steady := st.Phase(phase.Steady)
			if steady.Total.Sent != prog.Phases[4].Messages {
				t.Errorf("steady sent %d, planned %d", steady.Total.Sent, prog.Phases[4].Messages)
			}
			if g := steady.Groups[1]; g.Sent != steady.Total.Sent || g.ExpectedOwn != g.Sent || g.ReceivedOwn != g.Sent {
				t.Errorf("pub group view: %+v", g)
			}
			if g := steady.Groups[0]; g.Received != steady.Total.Sent || g.Sent != 0 {
				t.Errorf("sub group view: received %d sent %d", g.Received, g.Sent)
			}
			if len(st.Groups) != 2 || st.Groups[0].Connected != 5 || st.Groups[1].ConnectedAtEnd != 5 {
				t.Errorf("groups: %+v", st.Groups)
			}
			checkTimeline(t, st)
		})
	}
}

func TestRunFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults broker.Faults
		check  func(t *testing.T, m stats.Metrics, fc broker.FaultCounts)
	}{
		{
			name:   "one delivery in 100 dropped is exactly lost",
			faults: broker.Faults{DropEvery: 100},
			check: func(t *testing.T, m stats.Metrics, fc broker.FaultCounts) {
				if fc.Dropped == 0 || m.Lost != int64(fc.Dropped) {
					t.Errorf("lost %d, broker dropped %d", m.Lost, fc.Dropped)
				}
				if m.Expected != m.Sent || m.Received != m.Expected-m.Lost {
					t.Errorf("expected %d received %d lost %d", m.Expected, m.Received, m.Lost)
				}
			},
		},
		{
			name:   "duplicated deliveries are exactly duplicates",
			faults: broker.Faults{DuplicateEvery: 50},
			check: func(t *testing.T, m stats.Metrics, fc broker.FaultCounts) {
				if fc.Duplicated == 0 || m.Duplicates != int64(fc.Duplicated) {
					t.Errorf("duplicates %d, broker duplicated %d", m.Duplicates, fc.Duplicated)
				}
				if m.Lost != 0 || m.Received != m.Expected+m.Duplicates {
					t.Errorf("lost %d received %d expected %d", m.Lost, m.Received, m.Expected)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := compile(t, e2ePlan(5, 0, 2*time.Second))
			prog.Drain = time.Second
			st, b := runWith(t, prog, broker.Options{Faults: tt.faults}, Options{})
			tt.check(t, all(st), b.FaultCounts())
			checkTimeline(t, st)
		})
	}
}

// TestRunDelayMovesLatency: a broker that holds every delivery D longer
// moves mqplan's measured latency by exactly what the broker added. The
// ground truth is the fault hook's own record of how long it really held
// each delivery (Broker.DelayHeld: D plus the lateness of the timer that
// released it, about a millisecond at the median on a loaded machine).
// Two claims, each as tight as it can be:
//   - mqplan's latency percentiles (p10, p50) move by the held time's, within
//     1 ms (timer and scheduling granularity) plus the spread the same plan
//     shows without the delay (its p90 - p10: a run's own jitter is in both
//     runs). The tail is left out: quantiles of a sum are not sums of
//     quantiles, and there the two runs' jitters add up.
//   - the injector holds every delivery at least D, and at the median no
//     more than D + D/4: a delay applied twice (or not at all) fails both.
func TestRunDelayMovesLatency(t *testing.T) {
	const delay = 20 * time.Millisecond
	type dist struct{ min, p10, p50, p90 time.Duration }
	quantiles := func(h *hdrhistogram.Histogram) dist {
		at := func(q float64) time.Duration { return time.Duration(h.ValueAtQuantile(q)) * time.Microsecond }
		return dist{min: time.Duration(h.Min()) * time.Microsecond, p10: at(10), p50: at(50), p90: at(90)}
	}
	measure := func(f broker.Faults) (latency, held dist) {
		prog := compile(t, e2ePlan(2, 1, 2*time.Second))
		st, b := runWith(t, prog, broker.Options{Faults: f}, Options{})
		h := st.Phase(phase.Steady).Total.Latency
		if h == nil || h.TotalCount() == 0 {
			t.Fatal("no latency samples")
		}
		if hh := b.DelayHeld(); hh != nil {
			if hh.TotalCount() != b.FaultCounts().Delayed {
				t.Fatalf("%d holding times for %d delayed deliveries", hh.TotalCount(), b.FaultCounts().Delayed)
			}
			held = quantiles(hh)
		}
		return quantiles(h), held
	}
	base, _ := measure(broker.Faults{})
	delayed, held := measure(broker.Faults{Delay: delay})
	tol := time.Millisecond + (base.p90 - base.p10)
	t.Logf("latency without delay %+v, with %+v; held %+v; tolerance %v", base, delayed, held, tol)

	if held.min < delay || held.p50 > delay+delay/4 {
		t.Errorf("the broker held deliveries %v at least, %v at the median: want %v to %v", held.min, held.p50, delay, delay+delay/4)
	}
	if delayed.min < held.min {
		t.Errorf("a delivery held %v was measured at %v", held.min, delayed.min)
	}
	for _, q := range []struct {
		name                string
		base, delayed, held time.Duration
	}{
		{"p10", base.p10, delayed.p10, held.p10},
		{"p50", base.p50, delayed.p50, held.p50},
	} {
		if moved := q.delayed - q.base; moved < q.held-tol || moved > q.held+tol {
			t.Errorf("%s moved from %v to %v, by %v: the broker held deliveries %v (%s), want that ± %v", q.name, q.base, q.delayed, moved, q.held, q.name, tol)
		}
	}
}

func TestRunUnreachableBroker(t *testing.T) {
	prog := compile(t, e2ePlan(3, 1, time.Second))
	prog.Plan.Broker.ConnectTimeout = 2 * time.Second
	start := time.Now()
	// Port 1 on loopback: nothing listens there, the dial is refused.
	st, err := Run(context.Background(), prog, Options{BrokerURL: "mqtt://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
	if !strings.Contains(st.Incomplete, "group sub: none of its 3 clients could connect") {
		t.Errorf("incomplete = %q", st.Incomplete)
	}
	if m := all(st); m.ConnectFailed != 3 || m.ConnectAttempts != 3 || m.Sent != 0 {
		t.Errorf("connect failed %d attempts %d sent %d", m.ConnectFailed, m.ConnectAttempts, m.Sent)
	}
	if len(st.ErrorSamples) == 0 || !strings.Contains(st.ErrorSamples[0], "refused") {
		t.Errorf("error samples: %v", st.ErrorSamples)
	}
}

func TestRunBrokerDropsConnections(t *testing.T) {
	prog := compile(t, e2ePlan(4, 1, 2*time.Second))
	prog.Drain = time.Second
	kick := &kicker{match: "-pub-"}
	st, _ := runWith(t, prog, broker.Options{}, Options{Progress: kick.progress}, kick.started)
	m := all(st)
	if m.Disconnects != 4 {
		t.Errorf("disconnects = %d, want 4 (errors %v)", m.Disconnects, st.ErrorSamples)
	}
	if st.Incomplete != "" {
		t.Errorf("incomplete: %q", st.Incomplete)
	}
	if st.Groups[1].ConnectedAtEnd != 0 || st.Groups[0].ConnectedAtEnd != 4 {
		t.Errorf("groups at end: %+v", st.Groups)
	}
	if m.Sent == 0 || m.Received == 0 {
		t.Errorf("sent %d received %d", m.Sent, m.Received)
	}
	checkTimeline(t, st)
	// The timeline sees the publishers go: the last second has none of
	// them connected and all four down, the subscribers all still there.
	if n := len(st.Timeline); n == 0 {
		t.Error("no timeline")
	} else if last := st.Timeline[n-1]; last.Groups[1].Connected != 0 || last.Groups[1].Lost != 4 || last.Groups[0].Connected != 4 {
		t.Errorf("last second's groups: %+v", last.Groups)
	}
}

var errKicked = errors.New("kicked by the test")

// kicker makes the broker drop, once the steady phase has started, every
// client whose id contains match.
type kicker struct {
	match string
	b     *broker.Broker
	once  sync.Once
}

// started records the broker (runWith's hook).
func (k *kicker) started(b *broker.Broker) { k.b = b }

// progress kicks the clients at the first steady-phase progress report.
func (k *kicker) progress(p Progress) {
	if p.Phase != phase.Steady {
		return
	}
	k.once.Do(func() { k.b.Kick(k.match) })
}

// swallowHook drops the at-th PUBLISH of each client whose id contains
// match without processing or acknowledging it, and then the client: the
// message is in flight, unacknowledged, when the client comes back.
type swallowHook struct {
	mqtt.HookBase
	match string
	at    int
	mu    sync.Mutex
	seen  map[string]int
}

func (h *swallowHook) ID() string           { return "test-swallow" }
func (h *swallowHook) Provides(b byte) bool { return b == mqtt.OnPublish }

func (h *swallowHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if !strings.Contains(cl.ID, h.match) {
		return pk, nil
	}
	h.mu.Lock()
	h.seen[cl.ID]++
	n := h.seen[cl.ID]
	h.mu.Unlock()
	if n != h.at {
		return pk, nil
	}
	cl.Stop(errKicked)
	return pk, packets.ErrRejectPacket
}

func TestRunInterrupted(t *testing.T) {
	prog := compile(t, e2ePlan(2, 1, time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	start := time.Now()
	st, err := Run(ctx, prog, Options{BrokerURL: b.URL(), Progress: func(p Progress) {
		if p.Phase == phase.Steady {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Interrupted {
		t.Error("not marked interrupted")
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("interrupted run took %v", el)
	}
	if m := all(st); m.Sent == 0 || m.Received != m.Sent {
		t.Errorf("sent %d received %d", m.Sent, m.Received)
	}
}

// TestRunAgainstMosquitto runs the exact-accounting plan against a real
// Mosquitto: every count must match as it does on the embedded broker.
func TestRunAgainstMosquitto(t *testing.T) {
	url := mosquittotest.Start(t)
	for _, qos := range []byte{0, 1, 2} {
		t.Run("qos"+string('0'+qos), func(t *testing.T) {
			prog := compile(t, e2ePlan(5, qos, time.Second))
			st, m := runAt(t, prog, url)
			if st.Incomplete != "" {
				t.Fatalf("incomplete: %s (%v)", st.Incomplete, st.ErrorSamples)
			}
			want := planned(prog)
			if m.Sent != want || m.Received != want || m.Lost != 0 || m.Duplicates != 0 || m.OutOfOrder != 0 || m.Corrupted != 0 {
				t.Errorf("sent %d received %d lost %d dup %d ooo %d corrupt %d, want %d delivered exactly", m.Sent, m.Received, m.Lost, m.Duplicates, m.OutOfOrder, m.Corrupted, want)
			}
			if qos > 0 && m.Acked != m.Sent {
				t.Errorf("acked %d of %d", m.Acked, m.Sent)
			}
			if st.Broker != nil {
				t.Error("broker stats reported for an external broker")
			}
		})
	}
}

// TestProtocols runs the exact-accounting plan over MQTT 3.1, 3.1.1 and 5,
// on the embedded broker and on Mosquitto where installed: every count
// must be the same on every protocol.
func TestProtocols(t *testing.T) {
	t.Parallel()
	brokers := map[string]string{}
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	brokers["embedded"] = b.URL()
	if mosquittotest.Binary() != "" || os.Getenv("CI") != "" {
		brokers["mosquitto"] = mosquittotest.Start(t)
	}
	for name, url := range brokers {
		for _, proto := range []int{3, 4, 5} {
			for _, qos := range []byte{0, 1, 2} {
				t.Run(fmt.Sprintf("%s/v%d/qos%d", name, proto, qos), func(t *testing.T) {
					p := e2ePlan(3, qos, 500*time.Millisecond)
					for i := range p.Groups {
						p.Groups[i].Protocol = proto
						// MQTT 3.1 allows client ids of 23 characters at most.
						p.Groups[i].ClientID = plans.MustTemplate(p.Groups[i].Name + "-%i")
					}
					prog := compile(t, p)
					st, m := runAt(t, prog, url)
					want := planned(prog)
					if st.Incomplete != "" || m.Sent != want || m.Received != want || m.Lost != 0 || m.Duplicates != 0 || m.Corrupted != 0 {
						t.Fatalf("incomplete %q sent %d received %d lost %d dup %d corrupt %d (want %d) errors %v",
							st.Incomplete, m.Sent, m.Received, m.Lost, m.Duplicates, m.Corrupted, want, st.ErrorSamples)
					}
					if qos > 0 && m.Acked != m.Sent {
						t.Errorf("acked %d of %d", m.Acked, m.Sent)
					}
				})
			}
		}
	}
}

// TestListenOnlyMeasuresOtherRuns runs a subscriber-only plan and, at the
// same time, a separate publisher-only run (as `mqplan sub` and `mqplan
// pub` in two terminals): the subscriber counts every message, with
// latency from the publisher's wall-clock header.
func TestListenOnlyMeasuresOtherRuns(t *testing.T) {
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	subPlan := e2ePlan(3, 1, 3*time.Second)
	subPlan.Groups = subPlan.Groups[:1]
	subPlan.Groups[0].Subscribe[0].Topic = plans.MustTemplate("e2e/+")
	pubPlan := e2ePlan(2, 1, time.Second)
	pubPlan.Groups = pubPlan.Groups[1:]
	pubPlan.Warmup = 0
	subProg, pubProg := compile(t, subPlan), compile(t, pubPlan)

	ready := make(chan struct{})
	var once sync.Once
	var subStats *stats.Stats
	done := make(chan error, 1)
	go func() {
		st, err := Run(context.Background(), subProg, Options{BrokerURL: b.URL(), Progress: func(p Progress) {
			if p.Phase == phase.Steady || p.Phase == phase.Warmup {
				once.Do(func() { close(ready) })
			}
		}})
		subStats = st
		done <- err
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the subscriber run never got ready")
	}
	pubStats, err := Run(context.Background(), pubProg, Options{BrokerURL: b.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sent, got := all(pubStats), all(subStats)
	// Three subscribers on e2e/+ each hear both publishers.
	if sent.Sent == 0 || got.Received != 3*sent.Sent || got.Duplicates != 0 || got.Corrupted != 0 || got.OutOfOrder != 0 {
		t.Fatalf("published %d, subscribers received %d (dup %d, corrupt %d, ooo %d)", sent.Sent, got.Received, got.Duplicates, got.Corrupted, got.OutOfOrder)
	}
	if got.Latency == nil || got.Latency.TotalCount() != got.Received || got.Latency.ValueAtQuantile(50) > 1e6 {
		t.Errorf("latency of other-process messages: %v", got.Latency)
	}
	// The deliveries' window (what a listen-only plan's rates cover) lies
	// within the subscribers' run and within the publishers' whole run,
	// which is shorter.
	if w := got.ReceiveWindow(); got.FirstReceived <= 0 || got.LastReceived > subStats.Elapsed || w <= 0 || w > pubStats.Elapsed {
		t.Errorf("deliveries from %v to %v (%v) in a %v run, for a publisher run of %v", got.FirstReceived, got.LastReceived, w, subStats.Elapsed, pubStats.Elapsed)
	}
}

// TestReconnect kicks clients out mid-run and checks that they come back,
// that the disconnects and reconnects are counted, and that loss across
// the outage is exact: none when the session survives and the broker is
// not at fault, and exactly the undelivered messages otherwise. The
// subscribers' loss is checked against the broker's own record
// (deliveryTruth): at least the deliveries it never wrote, at most those
// never acknowledged.
func TestReconnect(t *testing.T) {
	tests := []struct {
		name       string
		kick       string // client id fragment of the clients to kick
		persistent bool   // subscribers keep their session (clean_start false)
		wantLoss   bool
		maxLoss    int64 // when wantLoss is false
		// takeoverWindow: the loss must be exactly the messages mochi
		// stranded in its session takeover window (see below).
		takeoverWindow bool
		// mosquitto: run against Mosquitto, through a proxy that cuts the
		// kicked clients' connections (the broker is not at fault).
		mosquitto bool
		// retain: publishers publish retained messages, so a subscriber
		// that subscribes again is sent its topic's retained message.
		retain bool
		qos    byte // 1 unless set
		// swallow: drop the clients while one of their messages is in
		// flight (swallowHook) rather than between messages (kicker).
		swallow bool
	}{
		// A QoS 1 message written just before the broker drops the
		// connection may never be delivered: at most one a publisher.
		{name: "publishers come back and catch up", kick: "-pub-", maxLoss: 3},
		// The broker swallows one message of each publisher and drops
		// it: with a clean session the message is gone; with a kept
		// session the publisher sends it again when it is back (MQTT's
		// resend on session resume), with whatever else was in flight.
		{name: "publishers with a clean session lose what was in flight", kick: "-pub-", swallow: true, wantLoss: true},
		{name: "publishers with a kept session send in-flight messages again (QoS 1)", kick: "-pub-", swallow: true, persistent: true},
		{name: "publishers with a kept session send in-flight messages again (QoS 2)", kick: "-pub-", swallow: true, persistent: true, qos: 2},
		// Where the broker is not at fault (Mosquitto, the connection cut
		// on the network), a kept session loses nothing: the outage (about
		// 15 messages a subscriber) is queued and delivered on return.
		{name: "subscribers with a kept session lose nothing (Mosquitto)", kick: "-sub-", persistent: true, mosquitto: true},
		// mochi v2.7.9 loses what falls in its session takeover window.
		// attachClient calls inheritClientSession before it registers the
		// new client (Clients.Add); inheritClientSession marks the old
		// client taken over, clones its inflight store into the new
		// client, re-subscribes, then clears the old client's inflight
		// store. Until Clients.Add, publishToSubscribers still finds the
		// old client by id and stores a delivery in its inflight store
		// (and writes nothing: its connection is closed). Stored after
		// the clone, the delivery is never carried over: it is cleared
		// with the old store, or stays in it for good. deliveryTruth sees
		// those deliveries (OnQosPublish on a taken-over client, not in
		// the new session's inflight store at OnSessionEstablished), and
		// mqplan's loss must be exactly them. The window is microseconds
		// against 20 ms between two messages of a topic, so it holds at
		// most one message a takeover: at most 3 here (seen: 2 runs in
		// 30, one message each).
		{name: "subscribers with a kept session lose only mochi's takeover window", kick: "-sub-", persistent: true, takeoverWindow: true},
		{name: "subscribers with a clean session lose the outage, exactly", kick: "-sub-", wantLoss: true},
		// The replayed retained message is one the subscriber may have
		// had already: it is foreign, not a duplicate or out of order.
		{name: "resubscribing to retained topics: the replay is foreign", kick: "-sub-", wantLoss: true, retain: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qos := tt.qos
			if qos == 0 {
				qos = 1
			}
			p := e2ePlan(3, qos, 2*time.Second)
			p.Drain = 2 * time.Second
			for i := range p.Groups {
				p.Groups[i].Reconnect = &plans.Reconnect{After: 300 * time.Millisecond, Max: 5}
				if tt.persistent {
					p.Groups[i].CleanStart = false
					p.Groups[i].SessionExpiry = time.Minute
				}
				if pub := p.Groups[i].Publish; pub != nil {
					pub.Retain = tt.retain
				}
			}
			prog := compile(t, p)
			var st *stats.Stats
			truth := newDeliveryTruth()
			switch {
			case tt.mosquitto:
				px := startKickProxy(t, strings.TrimPrefix(mosquittotest.Start(t), "mqtt://"))
				var once sync.Once
				kicked := 0
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var err error
				st, err = Run(ctx, prog, Options{BrokerURL: px.URL(), Progress: func(pr Progress) {
					if pr.Phase == phase.Steady {
						once.Do(func() { kicked = px.kick(tt.kick) })
					}
				}})
				if err != nil {
					t.Fatal(err)
				}
				if kicked != 3 {
					t.Fatalf("the proxy cut %d clients, want 3", kicked)
				}
			case tt.swallow:
				sw := &swallowHook{match: tt.kick, at: 30, seen: map[string]int{}}
				st, _ = runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{sw, truth}}, Options{})
			default:
				kick := &kicker{match: tt.kick}
				st, _ = runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{truth}}, Options{Progress: kick.progress}, kick.started)
			}
			m := all(st)
			if tt.swallow && tt.wantLoss && m.Lost < 3 {
				t.Errorf("lost %d: each of the 3 swallowed messages should be lost", m.Lost)
			}
			if m.Disconnects != 3 || m.Reconnects != 3 {
				t.Fatalf("disconnects %d reconnects %d, want 3 and 3 (errors %v)", m.Disconnects, m.Reconnects, st.ErrorSamples)
			}
			if st.Groups[0].ConnectedAtEnd != 3 || st.Groups[1].ConnectedAtEnd != 3 {
				t.Errorf("connected at end: %+v", st.Groups)
			}
			checkTimeline(t, st)
			// The timeline has the kicked group's disconnects (its clients
			// are back within a second, so a snapshot rarely sees them
			// down) and ends with every client of both groups connected.
			kicked, disconnects := 1, int64(0)
			if tt.kick == "-sub-" {
				kicked = 0
			}
			for _, s := range st.Timeline {
				disconnects += s.Groups[kicked].Disconnects
			}
			last := st.Timeline[len(st.Timeline)-1]
			if disconnects != 3 || last.Groups[0].Connected != 3 || last.Groups[1].Connected != 3 || last.Lost != 0 {
				t.Errorf("group %s: %d disconnects in the timeline (want 3); last second %+v", st.Groups[kicked].Name, disconnects, last.Groups)
			}
			if want := planned(prog); m.Sent != want {
				t.Errorf("sent %d of %d planned: a publisher did not resume its schedule", m.Sent, want)
			}
			if m.Lost != m.Expected-(m.Received-m.Duplicates) {
				t.Errorf("lost %d is not expected %d - first deliveries %d", m.Lost, m.Expected, m.Received-m.Duplicates)
			}
			if !tt.mosquitto {
				// The broker's record: every expected delivery it never
				// wrote is lost, and one it saw acknowledged is not.
				least, most := truth.lostBounds("-sub-", m.Expected)
				t.Logf("lost %d; the broker never wrote %d expected deliveries and saw %d not acknowledged; stranded at takeover %d", m.Lost, least, most, truth.stranded())
				if m.Lost < least || m.Lost > most {
					t.Errorf("lost %d, but the broker wrote all but %d expected deliveries and saw all but %d acknowledged", m.Lost, least, most)
				}
			}
			wantForeign := int64(0)
			if tt.retain {
				wantForeign = 3 // one retained topic per subscriber
			}
			// (mochi resends a kept session's backlog interleaved with
			// new deliveries: out of order there is the broker's doing.)
			if m.Foreign != wantForeign || tt.retain && (m.Duplicates != 0 || m.OutOfOrder != 0) {
				t.Errorf("foreign %d (want %d) duplicates %d out of order %d", m.Foreign, wantForeign, m.Duplicates, m.OutOfOrder)
			}
			switch {
			case tt.takeoverWindow:
				if s := truth.stranded(); m.Lost != s || s > 3 {
					t.Errorf("lost %d; mochi stranded %d in its takeover window (at most one for each of the 3 takeovers)", m.Lost, s)
				}
			case tt.wantLoss && m.Lost == 0 || !tt.wantLoss && m.Lost > tt.maxLoss:
				t.Errorf("lost %d (want loss: %v, at most %d without)", m.Lost, tt.wantLoss, tt.maxLoss)
			}
		})
	}
}

// TestKeepalive holds idle connections for several keepalive periods: the
// pinger must keep them open (mochi drops a client silent for 1.5×).
func TestKeepalive(t *testing.T) {
	p := e2ePlan(3, 0, 4*time.Second)
	p.Groups = p.Groups[:1]
	p.Groups[0].Subscribe = nil
	p.Groups[0].Keepalive = time.Second
	p.Warmup = 0
	st, _ := runWith(t, compile(t, p), broker.Options{}, Options{})
	if m := all(st); m.Disconnects != 0 || m.ConnectOK != 3 || st.Groups[0].ConnectedAtEnd != 3 {
		t.Fatalf("disconnects %d, connected %d, at end %d (errors %v)", m.Disconnects, m.ConnectOK, st.Groups[0].ConnectedAtEnd, st.ErrorSamples)
	}
}

// TestWillsAreForeign: the will of a dropped client reaches its watchers,
// and as it is not one of the run's measured messages it counts as
// foreign, never as corrupted or received.
func TestWillsAreForeign(t *testing.T) {
	p := e2ePlan(2, 1, 2*time.Second)
	p.Groups = append(p.Groups,
		plans.Group{Name: "watched", Count: 3, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000,
			Will: &plans.Will{Topic: plans.MustTemplate("wills/%c"), Payload: "gone", QoS: 1}},
		plans.Group{Name: "watcher", Count: 1, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000,
			Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("wills/#"), QoS: 1}}},
	)
	prog := compile(t, p)
	kick := &kicker{match: "-watched-"}
	st, _ := runWith(t, prog, broker.Options{}, Options{Progress: kick.progress}, kick.started)
	m := all(st)
	if m.Foreign != 3 || m.Corrupted != 0 || m.Lost != 0 || m.Disconnects != 3 {
		t.Fatalf("foreign %d corrupted %d lost %d disconnects %d (errors %v)", m.Foreign, m.Corrupted, m.Lost, m.Disconnects, st.ErrorSamples)
	}
}
