package runner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// counterPlan is a short QoS 1 run whose broker.metrics is m.
func counterPlan(m *plans.BrokerMetrics) *plans.Plan {
	pl := e2ePlan(2, 1, 2*time.Second)
	pl.Drain = time.Second
	pl.Broker.Metrics = m
	return pl
}

// crossNotices are the cross-check's notices among st's.
func crossNotices(st *stats.Stats) []string {
	var out []string
	for _, n := range st.Notices {
		if strings.Contains(n, "the broker counted") || strings.Contains(n, "the embedded broker counted") {
			out = append(out, n)
		}
	}
	return out
}

// delta is a cumulative counter's change over the run, and whether both
// ends hold it.
func delta(st *stats.Stats, c brokerstat.Counter) (int64, bool) {
	s, ok1 := st.CountersStart.Get(c)
	e, ok2 := st.CountersEnd.Get(c)
	return e - s, ok1 && ok2
}

// TestSysCountersMosquitto: with broker.metrics.sys against a Mosquitto
// that updates $SYS every second, every second of the timeline after the
// first update carries its counters, the PUBLISH-received delta is
// exactly what mqplan wrote, the PUBLISH-sent delta what its clients and
// the monitor received, so no cross-check warning; a client outside the
// plan publishing during the run makes the warning appear, with both
// numbers. The monitor is counted nowhere in the plan's figures.
func TestSysCountersMosquitto(t *testing.T) {
	t.Parallel()
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	tests := []struct {
		name string
		// foreign publishes this many messages from a client outside
		// the plan during the run.
		foreign int
		want    string // a cross-check notice's text; "" for none
	}{
		{name: "clean run"},
		{name: "another client publishes", foreign: 5, want: "the broker counted %d PUBLISH received during the run, but the PUBLISH packets mqplan wrote at QoS 0 or 1 without the retain flag (resends included; Mosquitto counts no QoS 2 or retained PUBLISH) were %d (+5): other clients published"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := counterPlan(&plans.BrokerMetrics{Sys: true})
			pl.Broker.URLs = []string{p.MQTT}
			var other *mqttc.Conn
			if tt.foreign > 0 {
				targets, err := mqttc.NewTargets([]string{p.MQTT}, nil)
				if err != nil {
					t.Fatal(err)
				}
				other, err = mqttc.Dial(context.Background(), targets[0], mqttc.Options{ClientID: "outsider", CleanStart: true, Timeout: 5 * time.Second, Version: mqttc.Version311}, func() int64 { return 0 }, mqttc.Handlers{})
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
			}
			var once sync.Once
			opts := Options{Second: func(s stats.Second) {
				if other != nil && s.Sent > 0 {
					once.Do(func() {
						for range tt.foreign {
							_ = other.Publish(context.Background(), "outside/t", 0, false, []byte("x"), 0)
						}
					})
				}
			}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := Run(ctx, compile(t, pl), opts)
			if err != nil {
				t.Fatal(err)
			}
			m := all(st)
			if m.Foreign != 0 || m.Received != m.Expected {
				t.Errorf("the plan's figures: foreign %d, received %d of %d expected: the monitor leaked into them", m.Foreign, m.Received, m.Expected)
			}
			sampled := 0
			for _, s := range st.Timeline {
				if s.Counters.Sampled() {
					sampled++
					if _, ok := s.Counters.Get(brokerstat.PublishSent); !ok {
						t.Errorf("second at %s: no PUBLISH sent in %+v", s.At, s.Counters)
					}
				}
			}
			if sampled < len(st.Timeline)-1 {
				t.Errorf("%d of %d seconds carry the broker's counters", sampled, len(st.Timeline))
			}
			recv, ok := delta(st, brokerstat.PublishReceived)
			if !ok {
				t.Fatalf("no PUBLISH received at both ends: start %+v end %+v (notices %q)", st.CountersStart, st.CountersEnd, st.Notices)
			}
			if want := m.Sent + int64(tt.foreign); recv != want {
				t.Errorf("broker PUBLISH received delta %d, want %d", recv, want)
			}
			if sent, ok := delta(st, brokerstat.PublishSent); !ok || sent < m.Received {
				t.Errorf("broker PUBLISH sent delta %d (%v), want at least the %d deliveries", sent, ok, m.Received)
			}
			got := crossNotices(st)
			if tt.want == "" {
				if len(got) > 0 {
					t.Errorf("a clean run warns: %q", got)
				}
				return
			}
			// The outsider's traffic may move the broker's other counters
			// too: one notice at least says what it did.
			want := fmt.Sprintf(tt.want, recv, m.Sent)
			if !slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, want) }) {
				t.Errorf("cross-check notices %q, want one containing %q", got, want)
			}
		})
	}
}

// TestSysCountersEmbedded: the embedded broker's $SYS (mochi's topics)
// gives the counters too, and its own counters agree with mqplan's, the
// monitor's messages accounted for.
func TestSysCountersEmbedded(t *testing.T) {
	t.Parallel()
	prog := compile(t, counterPlan(&plans.BrokerMetrics{Sys: true}))
	start := func() (EmbeddedBroker, error) { return broker.Start(broker.Options{SysInterval: time.Second}) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Run(ctx, prog, Options{Embedded: start})
	if err != nil {
		t.Fatal(err)
	}
	m := all(st)
	for _, c := range []brokerstat.Counter{brokerstat.Clients, brokerstat.MemoryBytes, brokerstat.Subscriptions} {
		if v, ok := st.CountersEnd.Get(c); !ok || v <= 0 {
			t.Errorf("end %s = %d (%v), want a positive figure", c, v, ok)
		}
	}
	if recv, ok := delta(st, brokerstat.PublishReceived); !ok || recv != m.Sent {
		t.Errorf("PUBLISH received delta %d (%v), want %d", recv, ok, m.Sent)
	}
	if st.Broker == nil || st.Broker.MessagesReceived != m.Sent {
		t.Errorf("embedded counters %+v, want %d received", st.Broker, m.Sent)
	}
	if got := crossNotices(st); len(got) > 0 {
		t.Errorf("cross-check warns on a clean embedded run: %q", got)
	}
}

// emqxExposition is the EMQX-shaped exposition of testdata (hand-written
// from EMQX's collector source, not recorded) with its message
// counters set to received and sent.
func emqxExposition(t *testing.T, received, sent int64) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/brokerstat/emqx5-stats.prom")
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^emqx_messages_received \d+$`).ReplaceAllString(string(b), fmt.Sprintf("emqx_messages_received %d", received))
	return regexp.MustCompile(`(?m)^emqx_messages_sent \d+$`).ReplaceAllString(s, fmt.Sprintf("emqx_messages_sent %d", sent))
}

// TestPrometheusCounters: a broker's Prometheus endpoint (EMQX's
// exposition served by an httptest server whose counters advance with
// every scrape) is scraped once a second into the timeline and at the
// start and end; an endpoint that fails (500, a body that is not an
// exposition, one too large, one too slow) leaves the counters absent
// and says why in a notice, without its URL's secrets.
func TestPrometheusCounters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(t *testing.T, scrapes int64) (status int, body string, stall bool)
		notice  string // "" for a scrape that works
	}{
		{name: "advancing counters", handler: func(t *testing.T, n int64) (int, string, bool) {
			return 200, emqxExposition(t, 1000+100*n, 2000+200*n), false
		}},
		{name: "500", handler: func(*testing.T, int64) (int, string, bool) { return 500, "oops", false },
			notice: "failed at 0s: HTTP 500 Internal Server Error"},
		{name: "not an exposition", handler: func(*testing.T, int64) (int, string, bool) {
			return 200, "<html><body>please log in</body></html>", false
		}, notice: "not a Prometheus text exposition"},
		{name: "too large", handler: func(*testing.T, int64) (int, string, bool) {
			return 200, "emqx_messages_sent 1\n" + strings.Repeat("# padding comment line\n", 4096), false
		}, notice: "the exposition is larger than the limit"},
		{name: "too slow", handler: func(*testing.T, int64) (int, string, bool) { return 200, "", true },
			notice: "timed out"},
	}
	defer func(n int64) { maxExposition = n }(maxExposition)
	maxExposition = 64 << 10
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var scrapes atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				status, body, stall := tt.handler(t, scrapes.Add(1))
				if stall {
					<-req.Context().Done()
					return
				}
				w.WriteHeader(status)
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			url := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/api/v5/prometheus/stats?token=s3cr3t"
			st, _ := runWith(t, compile(t, counterPlan(&plans.BrokerMetrics{Prometheus: url})), broker.Options{}, Options{})
			for _, n := range st.Notices {
				if strings.Contains(n, "hunter2") || strings.Contains(n, "s3cr3t") {
					t.Errorf("a notice shows the URL's secrets: %q", n)
				}
			}
			if tt.notice != "" {
				found := false
				for _, n := range st.Notices {
					found = found || strings.Contains(n, "broker.metrics.prometheus: a scrape of http://***@") && strings.Contains(n, tt.notice)
				}
				if !found {
					t.Errorf("notices %q, want one about the scrape containing %q", st.Notices, tt.notice)
				}
				if st.CountersStart.Sampled() || st.CountersEnd.Sampled() {
					t.Errorf("counters sampled from a failing endpoint: %+v %+v", st.CountersStart, st.CountersEnd)
				}
				return
			}
			// The endpoint's figures are not this broker's: the cross-check
			// says so, with both numbers, and nothing else is noted.
			if got := crossNotices(st); len(got) == 0 || len(got) != len(st.Notices) || !strings.Contains(got[0], "PUBLISH received during the run, but the PUBLISH packets mqplan wrote (resends included) were 220") {
				t.Errorf("notices %q, want the cross-check's warnings only", st.Notices)
			}
			recv, ok := delta(st, brokerstat.PublishReceived)
			if !ok || recv <= 0 || recv%100 != 0 {
				t.Errorf("PUBLISH received delta %d (%v), want a positive multiple of 100", recv, ok)
			}
			if v, ok := st.CountersEnd.Get(brokerstat.MemoryBytes); !ok || v != 72925416+31598744 {
				t.Errorf("memory %d (%v)", v, ok)
			}
			sampled := 0
			for _, s := range st.Timeline {
				if s.Counters.Sampled() {
					sampled++
				}
			}
			if sampled < len(st.Timeline)-1 {
				t.Errorf("%d of %d seconds carry the scraped counters", sampled, len(st.Timeline))
			}
		})
	}
}

// TestPrometheusCounterReset: a counter that went down between the start
// and the end (the broker restarted or reset it) is said to have, never
// explained as other clients' traffic, and gives no change.
func TestPrometheusCounterReset(t *testing.T) {
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := scrapes.Add(1)
		body := regexp.MustCompile(`(?m)^emqx_messages_dropped \d+$`).ReplaceAllString(emqxExposition(t, 1000000/n, 2000000/n), fmt.Sprintf("emqx_messages_dropped %d", 1000/n))
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	st, _ := runWith(t, compile(t, counterPlan(&plans.BrokerMetrics{Prometheus: srv.URL})), broker.Options{}, Options{})
	for _, what := range []string{"PUBLISH received", "PUBLISH sent", "dropped"} {
		want := "broker.metrics: the broker's " + what + " counter went down during the run (from "
		if !slices.ContainsFunc(st.Notices, func(n string) bool {
			return strings.HasPrefix(n, want) && strings.HasSuffix(n, "): the broker restarted or reset it, so its change over the run is unknown")
		}) {
			t.Errorf("notices %q, want one starting %q", st.Notices, want)
		}
	}
	for _, n := range st.Notices {
		if strings.Contains(n, "other clients") {
			t.Errorf("a counter reset explained as other clients: %q", n)
		}
	}
}

// TestSysCountersMosquittoLikeForLike: Mosquitto 2.0's
// publish/messages/received leaves out QoS 2 and retained PUBLISHes (its
// read loop counts a packet whose first byte masked with 0xF5 is 0x30),
// so a clean QoS 2 or retained run cross-checks without a warning.
func TestSysCountersMosquittoLikeForLike(t *testing.T) {
	t.Parallel()
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	tests := []struct {
		name   string
		qos    byte
		retain bool
	}{
		{name: "QoS 2", qos: 2},
		{name: "QoS 1 retained", qos: 1, retain: true},
		{name: "QoS 0", qos: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := counterPlan(&plans.BrokerMetrics{Sys: true})
			pl.Broker.URLs = []string{p.MQTT}
			pl.Groups[0].Subscribe[0].QoS = tt.qos
			pl.Groups[1].Publish.QoS, pl.Groups[1].Publish.Retain = tt.qos, tt.retain
			st, _ := runAt(t, compile(t, pl), "")
			if _, ok := delta(st, brokerstat.PublishReceived); !ok {
				t.Fatalf("no PUBLISH received change; notices %q", st.Notices)
			}
			for _, n := range crossNotices(st) {
				t.Errorf("a clean run warns: %q", n)
			}
		})
	}
}

// TestSysMonitorAfterClients: the $SYS monitor connects after the plan's
// clients, so a broker with no connection to spare refuses the monitor
// (a notice), never a plan client.
func TestSysMonitorAfterClients(t *testing.T) {
	// Room for the plan's four clients and no more: Mosquitto 2.0.11
	// lets max_connections + 1 in once a connection closed before its
	// CONNECT (StartProcess's check that it listens) has lowered its
	// count by one more than it raised it.
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1\nmax_connections 3"})
	pl := counterPlan(&plans.BrokerMetrics{Sys: true})
	pl.Broker.URLs = []string{p.MQTT}
	st, m := runAt(t, compile(t, pl), "")
	if st.Incomplete != "" || m.ConnectFailed != 0 || m.Received != m.Expected {
		t.Errorf("incomplete %q, connect failed %d, received %d of %d: the monitor took a plan client's slot", st.Incomplete, m.ConnectFailed, m.Received, m.Expected)
	}
	if !slices.ContainsFunc(st.Notices, func(n string) bool {
		return strings.HasPrefix(n, "broker.metrics.sys: the $SYS monitor could not connect")
	}) {
		t.Errorf("notices %q, want one saying the monitor could not connect", st.Notices)
	}
}

// TestSysCountersSilentBroker: a broker that publishes no $SYS (Mosquitto
// with sys_interval 0) leaves the counters absent and says so in a
// notice; the run itself is complete, and the monitor is still counted
// nowhere.
func TestSysCountersSilentBroker(t *testing.T) {
	t.Parallel()
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 0"})
	pl := counterPlan(&plans.BrokerMetrics{Sys: true})
	pl.Broker.URLs = []string{p.MQTT}
	st, m := runAt(t, compile(t, pl), "")
	if st.Incomplete != "" || m.Received != m.Expected || m.Foreign != 0 {
		t.Errorf("incomplete %q, received %d of %d, foreign %d", st.Incomplete, m.Received, m.Expected, m.Foreign)
	}
	if st.CountersStart.Sampled() || st.CountersEnd.Sampled() {
		t.Errorf("counters from a broker without $SYS: %+v %+v", st.CountersStart, st.CountersEnd)
	}
	for _, s := range st.Timeline {
		if s.Counters.Sampled() {
			t.Errorf("second at %s has counters %+v", s.At, s.Counters)
		}
	}
	want := "broker.metrics.sys: no $SYS update arrived within 3s of subscribing: the broker's counters at the start are missing, so their changes over the run are absent (thresholds on them fail with no samples)"
	if !slices.Contains(st.Notices, want) {
		t.Errorf("notices %q, want %q", st.Notices, want)
	}
}

// TestSysCountersBrokerGone: a broker that dies mid-run takes the $SYS
// monitor with it: a notice says so, the run ends without waiting for an
// update that cannot come, and no cross-check is made on stale figures.
func TestSysCountersBrokerGone(t *testing.T) {
	p := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	pl := counterPlan(&plans.BrokerMetrics{Sys: true})
	pl.Broker.URLs = []string{p.MQTT}
	var once sync.Once
	opts := Options{Second: func(s stats.Second) {
		if s.Sent > 0 {
			once.Do(p.Kill)
		}
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Run(ctx, compile(t, pl), opts)
	if err != nil {
		t.Fatal(err)
	}
	lost := slices.ContainsFunc(st.Notices, func(n string) bool {
		return strings.HasPrefix(n, "broker.metrics.sys: the $SYS monitor's connection was lost at ")
	})
	if !lost {
		t.Errorf("notices %q, want one saying the monitor's connection was lost", st.Notices)
	}
	if got := crossNotices(st); len(got) > 0 {
		t.Errorf("a cross-check on figures from before the broker died: %q", got)
	}
}
