package runner

import (
	"testing"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// hotRun is a run of one publisher and one subscriber, wired enough to
// drive the publish and receive paths without a broker.
func hotRun(tb testing.TB, size int) (*run, *client, []byte) {
	tb.Helper()
	p := &plans.Plan{
		File: "hot.yaml", Name: "hot",
		Broker: plans.Broker{URLs: []string{plans.Embedded}, Protocol: 5},
		Groups: []plans.Group{
			{Name: "sub", Count: 1, Start: 1, Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("t/1"), QoS: 1}}},
			{Name: "pub", Count: 1, Start: 1, Publish: &plans.Publish{Topic: plans.MustTemplate("t/%i"), QoS: 1, Size: size, Every: time.Millisecond}},
		},
		Duration: time.Hour,
	}
	prog, err := plans.Compile(p, plans.CompileOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	r := &run{prog: prog, rec: newRecorder(len(prog.Groups)), pattern: padPattern(prog.MaxPayload), epoch: time.Now()}
	sub := &client{plan: &prog.Clients[0], streams: map[uint32]*stream{}}
	return r, sub, make([]byte, size)
}

// publishStep is mqplan's own share of sending one message: the payload
// and the send record (paho's share is not ours to count).
func publishStep(r *run, pub *plans.Client, buf []byte, rec *sendRecord, k int) {
	intended := r.now()
	rec.lag = time.Duration(r.now() - intended)
	rec.phase = r.prog.PhaseOf(time.Duration(intended))
	encodePayload(buf, r.pattern, uint32(pub.Index), uint32(k+1), intended)
	r.rec.recordSend(pub.Index, rec)
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	r, sub, buf := hotRun(t, 1000)
	pub := &r.prog.Clients[1]
	rec := sendRecord{group: pub.Group, bytes: 1000, expected: 1, expectedBy: pub.Publish.ExpectedByGroup}
	k := 0
	if n := testing.AllocsPerRun(1000, func() { publishStep(r, pub, buf, &rec, k); k++ }); n != 0 {
		t.Errorf("publish path: %v allocations per message", n)
	}
	seq := uint32(0)
	if n := testing.AllocsPerRun(1000, func() {
		seq++
		encodePayload(buf, r.pattern, uint32(pub.Index), seq, r.now())
		r.receive(sub, buf, false)
	}); n != 0 {
		t.Errorf("receive path: %v allocations per message", n)
	}
	var dst []byte
	tmpl := plans.MustTemplate("bench/%c/%u/%i")
	vars := plans.TemplateVars{ClientID: "client-1", Username: "user", N: 42}
	if n := testing.AllocsPerRun(1000, func() { dst = tmpl.AppendExpand(dst[:0], vars) }); n != 0 {
		t.Errorf("topic expansion: %v allocations", n)
	}
}

func BenchmarkPublishPath(b *testing.B) {
	r, _, buf := hotRun(b, 1000)
	pub := &r.prog.Clients[1]
	rec := sendRecord{group: pub.Group, bytes: 1000, expected: 1, expectedBy: pub.Publish.ExpectedByGroup}
	b.ReportAllocs()
	b.SetBytes(1000)
	k := 0
	for b.Loop() {
		publishStep(r, pub, buf, &rec, k)
		k++
	}
}

func BenchmarkReceivePath(b *testing.B) {
	r, sub, buf := hotRun(b, 1000)
	pub := &r.prog.Clients[1]
	payloads := make([][]byte, 1024)
	for i := range payloads {
		payloads[i] = make([]byte, len(buf))
	}
	b.ReportAllocs()
	b.SetBytes(1000)
	seq := uint32(0)
	for b.Loop() {
		// Prepared in batches so that the loop measures decoding, the
		// content check, the stream state and recording, not encoding.
		if seq%1024 == 0 {
			b.StopTimer()
			for i := range payloads {
				encodePayload(payloads[i], r.pattern, uint32(pub.Index), seq+uint32(i)+1, r.now())
			}
			b.StartTimer()
		}
		r.receive(sub, payloads[seq%1024], false)
		seq++
	}
}

func BenchmarkTopicExpand(b *testing.B) {
	tmpl := plans.MustTemplate("bench/%c/%u/%i")
	vars := plans.TemplateVars{ClientID: "client-1", Username: "user", N: 42}
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = tmpl.AppendExpand(dst[:0], vars)
	}
}
