package runner

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/internal/wait"

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
	t.Parallel()
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

// TestRequestPathsDoNotAllocate measures the request/response hot paths
// over an in-memory pipe, with mqplan's real connection and reader: a
// requester's publish (correlation data written into the reused
// buffer), a responder's handling of a request (received, recorded,
// answered from the reader) and a requester's handling of an answer
// (matched to its request, recorded). None may allocate per message.
func TestRequestPathsDoNotAllocate(t *testing.T) {
	prog := compile(t, reqRespPlan(1, time.Hour, time.Second))
	r := &run{prog: prog, rec: newRecorder(len(prog.Groups), prog.Drain), pattern: padPattern(prog.MaxPayload), epoch: time.Now()}
	dev := &client{plan: &prog.Clients[0], streams: map[uint32]*stream{}, req: newReqState(prog, &prog.Clients[0])}
	be := &client{plan: &prog.Clients[1], streams: map[uint32]*stream{}, req: newReqState(prog, &prog.Clients[1])}
	pub := be.plan.Publish
	deadline := time.NewTimer(wait.Timeout) // one timer for every wait
	defer deadline.Stop()

	t.Run("request published", func(t *testing.T) {
		cn, bn := net.Pipe()
		t.Cleanup(func() { cn.Close(); bn.Close() })
		acked := make(chan struct{}, 1)
		c := mqttc.NewConn(cn, mqttc.Version5, r.now, mqttc.Handlers{Acked: func(mqttc.Ack) { acked <- struct{}{} }})
		t.Cleanup(c.Close)
		be.live.Store(c)
		go fakeBroker(bn, make(chan [4]byte, 1))
		buf := make([]byte, pub.Size)
		k := 0
		var failed error
		n := testing.AllocsPerRun(500, func() {
			if failed != nil {
				return
			}
			off, _ := pub.Schedule.At(k)
			encodePayload(buf, r.pattern, uint32(be.plan.Index), uint32(k+1), int64(off))
			if err := be.publishRequest(context.Background(), buf, k); err != nil {
				failed = err
				return
			}
			k++
			select {
			case <-acked:
			case <-deadline.C:
				failed = fmt.Errorf("request %d not acknowledged", k)
			}
		})
		if failed != nil {
			t.Fatal(failed)
		}
		if n != 0 {
			t.Errorf("request publish: %v allocations per message", n)
		}
	})

	t.Run("request answered", func(t *testing.T) {
		cn, bn := net.Pipe()
		t.Cleanup(func() { cn.Close(); bn.Close() })
		_ = bn.SetDeadline(time.Now().Add(wait.Timeout))
		handled := make(chan struct{}, 1)
		c := mqttc.NewConn(cn, mqttc.Version5, r.now, mqttc.Handlers{Request: func(p []byte, retained bool, q mqttc.Request[[]byte]) {
			r.request(dev, p, retained, q)
			handled <- struct{}{}
		}})
		t.Cleanup(c.Close)
		dev.live.Store(c)
		// A QoS 0 request as a broker forwards it: topic, properties
		// (response topic, correlation data), payload.
		const topic, respTopic = "cmd/1", "resp/x"
		props := 3 + len(respTopic) + 3 + plans.HeaderSize
		pkt := []byte{mqttc.TypePublish << 4}
		pkt = mqttc.AppendVBI(pkt, 2+len(topic)+1+props+pub.Size)
		pkt = mqttc.AppendString(pkt, topic)
		pkt = append(pkt, byte(props), mqttc.PropResponseTopic)
		pkt = mqttc.AppendString(pkt, respTopic)
		pkt = append(pkt, mqttc.PropCorrelationData, 0, plans.HeaderSize)
		corrAt := len(pkt)
		pkt = append(pkt, make([]byte, plans.HeaderSize)...)
		payloadAt := len(pkt)
		pkt = append(pkt, make([]byte, pub.Size)...)
		// The answer: topic, properties (correlation data), payload.
		size := prog.Plan.Groups[0].Respond.Size
		answer := make([]byte, 2+2+len(respTopic)+1+3+plans.HeaderSize+size)
		seq := uint32(0)
		var failed error
		n := testing.AllocsPerRun(500, func() {
			if failed != nil {
				return
			}
			seq++
			off, _ := pub.Schedule.At(int(seq) - 1)
			encodePayload(pkt[payloadAt:], r.pattern, uint32(be.plan.Index), seq, int64(off))
			copy(pkt[corrAt:], pkt[payloadAt:payloadAt+plans.HeaderSize])
			if _, err := bn.Write(pkt); err != nil {
				failed = err
				return
			}
			if _, err := io.ReadFull(bn, answer); err != nil {
				failed = err
				return
			}
			select {
			case <-handled:
			case <-deadline.C:
				failed = fmt.Errorf("request %d not handled", seq)
			}
		})
		if failed != nil {
			t.Fatal(failed)
		}
		if n != 0 {
			t.Errorf("request handling: %v allocations per message", n)
		}
		if got := answer[len(answer)-size:]; binary.BigEndian.Uint32(got) != uint32(dev.plan.Index) {
			t.Errorf("answer payload %x does not start with the responder's number", got[:4])
		}
	})

	t.Run("answer matched", func(t *testing.T) {
		corr := make([]byte, plans.HeaderSize)
		payload := make([]byte, prog.Plan.Groups[0].Respond.Size) // as the responder writes it
		binary.BigEndian.PutUint32(payload, uint32(dev.plan.Index))
		seq := uint32(0)
		n := testing.AllocsPerRun(500, func() {
			seq++
			off, _ := pub.Schedule.At(int(seq) - 1)
			encodePayload(corr, r.pattern, uint32(be.plan.Index), seq, int64(off))
			r.answer(be, payload, corr)
		})
		if n != 0 {
			t.Errorf("answer handling: %v allocations per message", n)
		}
		var got stats.Metrics
		for _, m := range r.rec.merge() {
			got.Merge(&m.Groups[be.plan.Group])
		}
		if q := got.ReqResp; q.Responses+q.Late != int64(seq) || q.Duplicates != 0 || got.Corrupted != 0 || got.Foreign != 0 {
			t.Errorf("answers %d on time, %d late, %d duplicates, %d corrupt, %d foreign; want %d", q.Responses, q.Late, q.Duplicates, got.Corrupted, got.Foreign, seq)
		}
	})
}

// tamperAnswers is a broker hook that changes every answer (a PUBLISH with
// correlation data and no response topic) before the broker routes it.
type tamperAnswers struct {
	mqtt.HookBase
	edit func(pk *packets.Packet)
}

func (h *tamperAnswers) ID() string           { return "test-tamper-answers" }
func (h *tamperAnswers) Provides(b byte) bool { return b == mqtt.OnPublish }

func (h *tamperAnswers) OnPublish(_ *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.Properties.ResponseTopic == "" && len(pk.Properties.CorrelationData) > 0 {
		pk.Payload = append([]byte(nil), pk.Payload...)
		pk.Properties.CorrelationData = append([]byte(nil), pk.Properties.CorrelationData...)
		h.edit(&pk)
	}
	return pk, nil
}

// TestRequestResponseTampered: an answer the broker changed on its way is
// never counted as an answer: not its correlation data (the request's
// header), not its payload (the responder's number and zero padding, of
// the responder group's size). Each such answer is a timeout, and a
// changed payload or header is corrupted. Before, an answer cut to its
// first 4 bytes or with its padding changed counted as on time.
func TestRequestResponseTampered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		edit    func(pk *packets.Packet)
		corrupt bool // counted as corrupted (else foreign)
	}{
		{name: "payload cut to the responder number", edit: func(pk *packets.Packet) { pk.Payload = pk.Payload[:4] }, corrupt: true},
		{name: "payload padding changed", edit: func(pk *packets.Packet) { pk.Payload[len(pk.Payload)-1] ^= 0xff }, corrupt: true},
		{name: "payload grown", edit: func(pk *packets.Packet) { pk.Payload = append(pk.Payload, 0) }, corrupt: true},
		{name: "sequence changed", edit: func(pk *packets.Packet) { pk.Properties.CorrelationData[6] ^= 1 }, corrupt: true},
		{name: "intended time changed", edit: func(pk *packets.Packet) { pk.Properties.CorrelationData[15] ^= 1 }, corrupt: true},
		{name: "correlation cut", edit: func(pk *packets.Packet) { pk.Properties.CorrelationData = pk.Properties.CorrelationData[:8] }},
		{name: "requester changed", edit: func(pk *packets.Packet) { pk.Properties.CorrelationData[3] ^= 0x40 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := compile(t, reqRespPlan(2, 300*time.Millisecond, time.Second))
			st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{&tamperAnswers{edit: tt.edit}}}, Options{})
			q := groupTotal(st, 1).ReqResp
			m := groupTotal(st, 1)
			if q.Expected == 0 || q.Responses != 0 || q.Late != 0 || q.Duplicates != 0 || q.Timeouts != q.Expected {
				t.Errorf("expected %d: responses %d late %d duplicates %d timeouts %d", q.Expected, q.Responses, q.Late, q.Duplicates, q.Timeouts)
			}
			if tt.corrupt && m.Corrupted != q.Expected {
				t.Errorf("corrupted %d, want every answer (%d)", m.Corrupted, q.Expected)
			}
			if !tt.corrupt && m.Foreign != q.Expected {
				t.Errorf("foreign %d, want every answer (%d)", m.Foreign, q.Expected)
			}
		})
	}
}
