package report

import (
	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/plans"
)

// The fixtures describe one small, fully populated run that every test
// shares: a subscribing group "sub" (4 clients) and a publishing group
// "pub" (4 clients, 800 msg/s together) over a 10 s steady phase. The
// figures are chosen so that expected values can be worked out by hand;
// histogram values stay below 2048 µs, where a 3-digit HDR histogram is
// exact, so percentiles come out as recorded.

const (
	subPassword = "hunter2-sub-secret"
	pubPassword = "correct-horse-pub-secret"
)

// started is fixed so that golden files never change with the clock.
var started = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func testPlan(thresholds ...string) *plans.Plan {
	p := &plans.Plan{
		File:        "plans/1to1-qos1.yaml",
		Name:        "1to1-qos1",
		Description: "One-to-one QoS 1 <&> every publisher has its own subscriber.\n",
		Broker: plans.Broker{
			URLs:           []string{plans.Embedded},
			Protocol:       5,
			ConnectTimeout: 10 * time.Second,
		},
		Groups: []plans.Group{
			{
				Name: "sub", Count: 4, Start: 1,
				ClientID:   plans.MustTemplate("sub-%i"),
				Username:   plans.MustTemplate("user-%i"),
				Password:   subPassword,
				Keepalive:  60 * time.Second,
				CleanStart: true, ConnectRate: 500, Protocol: 5,
				Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("bench/%i"), QoS: 1}},
			},
			{
				Name: "pub", Count: 4, Start: 1,
				ClientID:   plans.MustTemplate("pub-%i"),
				Password:   pubPassword,
				Keepalive:  60 * time.Second,
				CleanStart: true, ConnectRate: 500, Protocol: 5,
				Publish: &plans.Publish{Topic: plans.MustTemplate("bench/%i"), QoS: 1, Size: 1000, Rate: 800},
			},
		},
		Duration: 10 * time.Second,
		Drain:    5 * time.Second,
	}
	for i, th := range thresholds {
		p.Thresholds = append(p.Thresholds, plans.ThresholdSource{
			Expr: th,
			Pos:  plans.Pos{File: p.File, Line: 30 + i, Col: 5},
		})
	}
	return p
}

// hist returns a histogram holding n samples of each value (µs), given as
// value, count pairs.
func hist(t testing.TB, pairs ...int64) *hdrhistogram.Histogram {
	t.Helper()
	h := stats.NewHistogram()
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := h.RecordValues(pairs[i], pairs[i+1]); err != nil {
			t.Fatalf("RecordValues(%d, %d): %v", pairs[i], pairs[i+1], err)
		}
	}
	return h
}

// phasesAt builds the phases of the fixture run: connect 1 s, subscribe
// 100 ms, no warmup or ramp, steady 10 s, drain 500 ms, disconnect 100 ms.
func phasesAt() []stats.PhaseStats {
	bounds := map[phase.Phase][2]time.Duration{
		phase.Connect:    {0, time.Second},
		phase.Subscribe:  {time.Second, 1100 * time.Millisecond},
		phase.Warmup:     {1100 * time.Millisecond, 1100 * time.Millisecond},
		phase.Ramp:       {1100 * time.Millisecond, 1100 * time.Millisecond},
		phase.Steady:     {1100 * time.Millisecond, 11100 * time.Millisecond},
		phase.Drain:      {11100 * time.Millisecond, 11600 * time.Millisecond},
		phase.Disconnect: {11600 * time.Millisecond, 11700 * time.Millisecond},
	}
	var out []stats.PhaseStats
	for _, p := range phase.All {
		b := bounds[p]
		out = append(out, stats.PhaseStats{Phase: p, Start: b[0], End: b[1], Groups: make([]stats.Metrics, 2)})
	}
	return out
}

// fullStats is the fixture run with every kind of figure present.
func fullStats(t testing.TB) *stats.Stats {
	t.Helper()
	st := &stats.Stats{
		Started:   started,
		Elapsed:   11700 * time.Millisecond,
		BrokerURL: "mqtt://127.0.0.1:41883",
		Phases:    phasesAt(),
		Groups: []stats.GroupInfo{
			{Name: "sub", Clients: 4, Connected: 4, ConnectedAtEnd: 4},
			{Name: "pub", Clients: 4, Connected: 3, ConnectedAtEnd: 3},
		},
		Broker: &stats.Broker{
			MessagesReceived: 8000, MessagesSent: 7993,
			MessagesDropped: 7, InflightDropped: 3, ClientsMaximum: 8,
		},
		ErrorSamples: []string{"pub-4: connect: connection refused"},
	}
	set := func(p phase.Phase, g int, m stats.Metrics) {
		ph := st.Phase(p)
		ph.Groups[g] = m
	}

	// connect: sub 4/4 in 500..900 µs; pub 4 of 5 attempts, one refused.
	set(phase.Connect, 0, stats.Metrics{ConnectAttempts: 4, ConnectOK: 4, Connect: hist(t, 500, 2, 900, 2)})
	set(phase.Connect, 1, stats.Metrics{ConnectAttempts: 5, ConnectOK: 4, ConnectFailed: 1, Errors: 1, Connect: hist(t, 600, 4)})
	// subscribe: four SUBACKs.
	set(phase.Subscribe, 0, stats.Metrics{Subscribe: hist(t, 200, 3, 400, 1)})

	// steady: 8000 published, 7993 deliveries of which 3 duplicates, 10 lost.
	set(phase.Steady, 0, stats.Metrics{
		Expected: 8000, Received: 7993, Lost: 10, Duplicates: 3, OutOfOrder: 2, Corrupted: 1,
		ReceivedBytes: 7_993_000,
		Latency:       hist(t, 1000, 7900, 1500, 83, 2000, 10),
	})
	set(phase.Steady, 1, stats.Metrics{
		Sent: 8000, Acked: 7998, SentBytes: 8_000_000,
		ExpectedOwn: 8000, ReceivedOwn: 7993, LostOwn: 10,
		Late: 200, Errors: 2, Disconnects: 1, Reconnects: 1,
		Ack: hist(t, 300, 7900, 700, 98),
		Lag: hist(t, 10, 7800, 1200, 200),
	})
	for i := range st.Phases {
		ph := &st.Phases[i]
		for g := range ph.Groups {
			ph.Total.Merge(&ph.Groups[g])
		}
	}
	for s := 1; s <= 3; s++ {
		st.Timeline = append(st.Timeline, stats.Second{
			At: time.Duration(s) * time.Second, Phase: phase.Steady, Connected: 7,
			Sent: 800, Received: 799, P50: time.Millisecond, P99: 1500 * time.Microsecond,
			Max: 2 * time.Millisecond, LagMax: 1200 * time.Microsecond,
			Groups: []stats.GroupSecond{
				{Group: "sub", Connected: 4, Received: 799, P50: time.Millisecond, P99: 1500 * time.Microsecond, Max: 2 * time.Millisecond},
				{Group: "pub", Connected: 3, Sent: 800, LagMax: 1200 * time.Microsecond},
			},
			Broker: stats.ProcSample{Sampled: true, CPU: 20 * float64(s), RSS: int64(s) << 22},
			Self:   stats.ProcSample{Sampled: true, CPU: 50.5, RSS: 30 << 20},
			Counters: counters(map[brokerstat.Counter]int64{
				brokerstat.Clients: 9, brokerstat.PublishReceived: 1000 + 800*int64(s), brokerstat.PublishSent: 2000 + 820*int64(s),
				brokerstat.MemoryBytes: int64(s) << 21, brokerstat.Subscriptions: 5}),
		})
	}
	// The broker's own counters: its PUBLISH received moved by exactly
	// the 8000 sent, its PUBLISH sent by the deliveries and its $SYS
	// monitor's 120 messages; it dropped 7; it has no memory figure at
	// the start and no dropped count in the timeline.
	st.CountersStart = counters(map[brokerstat.Counter]int64{brokerstat.Clients: 1, brokerstat.PublishReceived: 1000,
		brokerstat.PublishSent: 2000, brokerstat.Dropped: 0, brokerstat.Subscriptions: 1})
	st.CountersEnd = counters(map[brokerstat.Counter]int64{brokerstat.Clients: 1, brokerstat.PublishReceived: 9000,
		brokerstat.PublishSent: 10113, brokerstat.Dropped: 7, brokerstat.MemoryBytes: 5 << 20, brokerstat.Subscriptions: 1})
	return st
}

// counters is a reading holding m.
func counters(m map[brokerstat.Counter]int64) brokerstat.Counters {
	var cs brokerstat.Counters
	for c, v := range m {
		cs.Put(c, v)
	}
	return cs
}

// emptyStats is a run that measured nothing: interrupted before it
// connected.
func emptyStats(testing.TB) *stats.Stats {
	return &stats.Stats{
		Started:     started,
		Elapsed:     300 * time.Millisecond,
		BrokerURL:   "mqtt://broker.invalid:1883",
		Interrupted: true,
		Incomplete:  "group sub: no client could connect",
	}
}

// compile compiles p's thresholds, failing the test on a plan error.
func compile(t testing.TB, p *plans.Plan) []*plans.Threshold {
	t.Helper()
	ths, errs := plans.CompileThresholds(p)
	if len(errs) > 0 {
		t.Fatalf("CompileThresholds: %v", errs)
	}
	return ths
}

// withBuiltins compiles p's thresholds and the built-in checks they leave,
// as plans.Compile does.
func withBuiltins(t testing.TB, p *plans.Plan) []*plans.Threshold {
	t.Helper()
	ths := compile(t, p)
	return append(ths, plans.BuiltinThresholds(ths)...)
}

// faultStats is the fixture run hit by faults: pub-3 was lost for good
// 50 messages before the end (50 unsent), 2 of its QoS 1 messages were
// never acknowledged and did not arrive, the broker lost 3 more and 5
// were still arriving (40/s) when its 2 s drain ended. So 8050 deliveries
// were expected, 7990 arrived (7993 with 3 duplicates) and 60 were lost:
// 50 unsent + 2 unacked + 3 by the broker + 5 late.
func faultStats(t testing.TB) *stats.Stats {
	st := fullStats(t)
	st.Groups[1] = stats.GroupInfo{Name: "pub", Clients: 4, Connected: 3, ConnectedAtEnd: 2, Lost: 1}
	st.ErrorSamples = []string{
		"connect pub-4 to mqtt://127.0.0.1:41883: connection refused",
		"pub-3 lost its connection: broker sent DISCONNECT: session taken over",
		"publish pub-3: connection closed (and 1 more like it)",
	}
	st.InFlightAtEnd = 2
	st.DrainEndRate, st.Drain = 40, 2*time.Second
	st.Notices = []string{"group sub: asked QoS 2, the broker granted QoS 1 (4 of 4 clients): deliveries come at the granted QoS"}
	ph := st.Phase(phase.Steady)
	ph.Groups[0].OverlapCopies = 5
	sub, pub := &ph.Groups[0], &ph.Groups[1]
	sub.Expected, sub.Lost, sub.LostUnsent, sub.LostUnacked = 8050, 60, 50, 2
	pub.Unsent, pub.ExpectedOwn, pub.ReceivedOwn, pub.LostOwn = 50, 8050, 7990, 60
	pub.LostUnsentOwn, pub.LostUnackedOwn = 50, 2
	sub.LostLate, pub.LostLateOwn = 5, 5
	pub.Errors, pub.Reconnects, pub.ClientsLost = 3, 0, 1
	ph.Total = stats.Metrics{}
	for g := range ph.Groups {
		ph.Total.Merge(&ph.Groups[g])
	}
	return st
}
