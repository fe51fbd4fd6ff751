package runner

import (
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// reqRespPlan is n devices answering commands on cmd/%i and n backend
// clients each commanding its device every 20 ms, at QoS 1, with the
// given answer timeout.
func reqRespPlan(n int, steady, timeout time.Duration) *plans.Plan {
	return &plans.Plan{
		File:   "reqresp.yaml",
		Name:   "reqresp",
		Broker: plans.Broker{URLs: []string{plans.Embedded}, Protocol: 5, ConnectTimeout: 5 * time.Second},
		Groups: []plans.Group{
			{Name: "devices", Count: n, Start: 1, Keepalive: 60 * time.Second, CleanStart: true, ConnectRate: 1000, Protocol: 5,
				Respond: &plans.Respond{Topic: plans.MustTemplate("cmd/%i"), QoS: 1, Size: 32}},
			{Name: "backend", Count: n, Start: 1, Keepalive: 60 * time.Second, CleanStart: true, ConnectRate: 1000, Protocol: 5,
				Publish: &plans.Publish{Topic: plans.MustTemplate("cmd/%i"), QoS: 1, Size: 64, Every: 20 * time.Millisecond,
					ResponseTopic: plans.MustTemplate("resp/%c"), ResponseTimeout: timeout}},
		},
		Warmup:   200 * time.Millisecond,
		Duration: steady,
		Drain:    2 * time.Second,
	}
}

// reqRespTruth is a broker hook counting, from the broker's side, the
// PUBLISH packets clients sent it: requests (with a response topic) and
// answers (correlation data, no response topic).
type reqRespTruth struct {
	mqtt.HookBase
	mu                sync.Mutex
	requests, answers int64
}

func (h *reqRespTruth) ID() string           { return "test-reqresp-truth" }
func (h *reqRespTruth) Provides(b byte) bool { return b == mqtt.OnPublish }

func (h *reqRespTruth) OnPublish(_ *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	h.mu.Lock()
	switch {
	case pk.Properties.ResponseTopic != "":
		h.requests++
	case len(pk.Properties.CorrelationData) > 0:
		h.answers++
	}
	h.mu.Unlock()
	return pk, nil
}

// groupTotal merges one group over every phase.
func groupTotal(st *stats.Stats, group int) stats.Metrics {
	var m stats.Metrics
	for i := range st.Phases {
		m.Merge(&st.Phases[i].Groups[group])
	}
	return m
}

// TestRequestResponse runs devices answering a backend's commands on the
// embedded broker and checks the accounting against the broker's own
// count of requests and answers: with no fault every request is answered
// once, in time; with deliveries dropped every drop (of a request or of
// an answer) is exactly one timeout; with every delivery held past the
// timeout every answer is late.
func TestRequestResponse(t *testing.T) {
	tests := []struct {
		name    string
		faults  broker.Faults
		timeout time.Duration
		check   func(t *testing.T, q stats.ReqResp, all stats.Metrics, fc broker.FaultCounts, truth *reqRespTruth)
	}{
		{
			name: "every request answered once in time", timeout: time.Second,
			check: func(t *testing.T, q stats.ReqResp, all stats.Metrics, _ broker.FaultCounts, truth *reqRespTruth) {
				if q.Responses != q.Expected || q.Expected != q.Requests || q.Timeouts != 0 || q.Late != 0 || q.Duplicates != 0 {
					t.Errorf("requests %d expected %d responses %d timeouts %d late %d duplicates %d", q.Requests, q.Expected, q.Responses, q.Timeouts, q.Late, q.Duplicates)
				}
				if q.Sent != truth.answers || q.Responses != truth.answers {
					t.Errorf("answers sent %d, received %d, the broker saw %d", q.Sent, q.Responses, truth.answers)
				}
				if q.RTT == nil || q.RTT.TotalCount() != q.Responses {
					t.Fatalf("rtt histogram holds %v samples, want %d", q.RTT, q.Responses)
				}
				// A round trip is two deliveries: never under the one-way
				// latency, and well under a second on loopback.
				if rtt, lat := q.RTT.ValueAtQuantile(50), all.Latency.ValueAtQuantile(50); rtt < lat || rtt > 500_000 {
					t.Errorf("rtt p50 %dµs, one-way latency p50 %dµs", rtt, lat)
				}
			},
		},
		{
			name: "a dropped request or answer is exactly one timeout", timeout: time.Second,
			faults: broker.Faults{DropEvery: 37},
			check: func(t *testing.T, q stats.ReqResp, all stats.Metrics, fc broker.FaultCounts, truth *reqRespTruth) {
				if fc.Dropped == 0 || q.Timeouts != fc.Dropped || q.Responses != q.Expected-fc.Dropped || q.Late != 0 {
					t.Errorf("timeouts %d responses %d of %d, the broker dropped %d", q.Timeouts, q.Responses, q.Expected, fc.Dropped)
				}
				// The dropped requests are the requests' lost deliveries;
				// the responders answered every other one.
				if q.Sent != q.Requests-all.Lost || q.Sent != truth.answers {
					t.Errorf("answers sent %d (broker saw %d), requests %d, lost %d", q.Sent, truth.answers, q.Requests, all.Lost)
				}
			},
		},
		{
			name: "answers held past the timeout are late", timeout: 100 * time.Millisecond,
			faults: broker.Faults{Delay: 150 * time.Millisecond},
			check: func(t *testing.T, q stats.ReqResp, _ stats.Metrics, _ broker.FaultCounts, truth *reqRespTruth) {
				if q.Responses != 0 || q.Late != q.Expected || q.Timeouts != q.Expected || q.Expected != truth.requests {
					t.Errorf("responses %d late %d timeouts %d of %d (broker saw %d requests)", q.Responses, q.Late, q.Timeouts, q.Expected, truth.requests)
				}
				if q.RTT == nil || q.RTT.Min() < 300_000 {
					t.Errorf("rtt min %v, want at least both deliveries' 150 ms", q.RTT)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := compile(t, reqRespPlan(4, time.Second, tt.timeout))
			var want int64
			for _, ph := range prog.Phases {
				want += ph.Requests
			}
			truth := &reqRespTruth{}
			st, b := runWith(t, prog, broker.Options{Faults: tt.faults, Hooks: []mqtt.Hook{truth}}, Options{})
			q := groupTotal(st, 1).ReqResp
			if q.Requests != want || truth.requests != want {
				t.Errorf("requests sent %d, the broker saw %d, the plan calls for %d", q.Requests, truth.requests, want)
			}
			// Answers sent are counted at the responders' group.
			d := groupTotal(st, 0).ReqResp
			if q.Sent != 0 || d.Failed != 0 || d.Requests != 0 {
				t.Errorf("backend sent %d answers; devices failed %d, sent %d requests", q.Sent, d.Failed, d.Requests)
			}
			q.Sent = d.Sent
			tt.check(t, q, all(st), b.FaultCounts(), truth)
		})
	}
}

// TestRequestResponseMosquitto runs the same plan against Mosquitto (MQTT
// 5), where every request must be answered.
func TestRequestResponseMosquitto(t *testing.T) {
	url := mosquittotest.Start(t)
	prog := compile(t, reqRespPlan(4, time.Second, time.Second))
	st, _ := runAt(t, prog, url)
	q := groupTotal(st, 1).ReqResp
	if q.Requests == 0 || q.Responses != q.Requests || q.Timeouts != 0 || q.Duplicates != 0 {
		t.Errorf("requests %d responses %d timeouts %d duplicates %d", q.Requests, q.Responses, q.Timeouts, q.Duplicates)
	}
}
