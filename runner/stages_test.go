package runner

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// publishTruth is a broker hook that records every measured PUBLISH the
// broker receives: its publisher, sequence and intended send time, as the
// broker saw them on the wire.
type publishTruth struct {
	mqtt.HookBase
	mu   sync.Mutex
	seen map[msgKey]int64 // intended time, Unix ns
}

// runTruth runs prog on the embedded broker with a publishTruth hook; the
// run must complete. The caller locks truth.mu to read it.
func runTruth(t *testing.T, prog *plans.Program) (*stats.Stats, *publishTruth) {
	t.Helper()
	truth := &publishTruth{seen: map[msgKey]int64{}}
	st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{truth}}, Options{})
	if st.Incomplete != "" || st.Interrupted {
		t.Fatalf("incomplete: %q interrupted=%v errors=%v", st.Incomplete, st.Interrupted, st.ErrorSamples)
	}
	return st, truth
}

// runValidTruth is runTruth on testdata/plans/valid/file with sets.
func runValidTruth(t *testing.T, file string, sets []string) (*plans.Program, *stats.Stats, *publishTruth) {
	t.Helper()
	p, err := plans.Load(filepath.Join("..", "testdata", "plans", "valid", file), plans.LoadOptions{Sets: sets})
	if err != nil {
		t.Fatal(err)
	}
	prog := compile(t, p)
	st, truth := runTruth(t, prog)
	return prog, st, truth
}

func (h *publishTruth) ID() string           { return "test-publish-truth" }
func (h *publishTruth) Provides(b byte) bool { return b == mqtt.OnPublish }

func (h *publishTruth) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if hd, ok := decodeHeader(pk.Payload); ok && hd.seq != 0 {
		h.mu.Lock()
		h.seen[msgKey{hd.pub, hd.seq}] = hd.intended
		h.mu.Unlock()
	}
	return pk, nil
}

// TestRunStages runs a staged plan on the embedded broker and checks, from
// the broker's side, that each stage received exactly the messages its
// schedule counts (plans.StagePlan.Messages), each once, and that every
// message's intended time is where the profile puts it: message k of a
// client is intended At(k) − At(0) after its first; and that each stage's
// metrics (stats.Stats.Stages, stages.<name>.*) count exactly those
// messages and the deliveries they imply. It runs a plan whose stages
// give every group's rate and one whose groups have their own.
func TestRunStages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		sets       []string
	}{
		// Scaled down: the shape, not the load, is under test.
		{"the plan's stages", "stages.yaml", []string{"warmup=300ms", "drain=3s", "stages[1].duration=600ms", "stages[3].duration=800ms", "stages[0].duration=600ms"}},
		// Each group at its own rates over one timeline (publish.stages).
		{"the groups' own stages", "group_stages.yaml", []string{"warmup=300ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) { runStages(t, tc.file, tc.sets) })
	}
}

func runStages(t *testing.T, file string, sets []string) {
	prog, st, truth := runValidTruth(t, file, sets)
	truth.mu.Lock()
	defer truth.mu.Unlock()
	perStage := make([]int64, len(prog.Stages))
	var warmup int64
	for key, intended := range truth.seen {
		c := &prog.Clients[key.pub]
		pub := c.Publish
		k := int(key.seq) - 1
		seg, ok := pub.Schedule.SegmentOf(k)
		if !ok {
			t.Fatalf("the broker received message %d of %s, which its schedule does not have", k, c)
		}
		if s := pub.Schedule.Profile.Segments()[seg].Stage; s >= 0 {
			perStage[s]++
		} else {
			warmup++
		}
		first, ok := truth.seen[msgKey{key.pub, 1}]
		if !ok {
			t.Fatalf("the broker never received the first message of %s", c)
		}
		at, _ := pub.Schedule.At(k)
		at0, _ := pub.Schedule.At(0)
		if intended-first != int64(at-at0) {
			t.Errorf("%s message %d intended %dns after its first, the schedule says %v", c, k, intended-first, at-at0)
		}
	}
	if warmup != prog.Phases[phase.Warmup].Messages {
		t.Errorf("warmup: the broker received %d, the schedule has %d", warmup, prog.Phases[phase.Warmup].Messages)
	}
	for i, sp := range prog.Stages {
		if perStage[i] != sp.Messages {
			t.Errorf("stage %d (%s): the broker received %d, the schedule counts %d", i, sp.Name, perStage[i], sp.Messages)
		}
	}
	// Per-stage metrics: each stage's cell counts exactly the messages the
	// broker received in its window and the deliveries they imply.
	if len(st.Stages) != len(prog.Stages) {
		t.Fatalf("%d stages measured, the plan has %d", len(st.Stages), len(prog.Stages))
	}
	for i, sp := range prog.Stages {
		got := &st.Stages[i]
		m := &got.Metrics
		if got.Name != sp.Name || got.Duration() != sp.Duration {
			t.Errorf("stage %d measured as %s for %v, planned %s for %v", i, got.Name, got.Duration(), sp.Name, sp.Duration)
		}
		if m.Sent != perStage[i] || m.Unsent != 0 || m.Expected != sp.Deliveries || m.Received != sp.Deliveries || m.Lost != 0 || m.Duplicates != 0 {
			t.Errorf("stage %s: sent %d unsent %d expected %d received %d lost %d dups %d; the broker received %d, the schedule counts %d deliveries",
				sp.Name, m.Sent, m.Unsent, m.Expected, m.Received, m.Lost, m.Duplicates, perStage[i], sp.Deliveries)
		}
		if n := int64(0); m.Latency != nil {
			n = m.Latency.TotalCount()
			if n != m.Received {
				t.Errorf("stage %s: %d latencies for %d deliveries", sp.Name, n, m.Received)
			}
		} else if m.Received > 0 {
			t.Errorf("stage %s: no latency for %d deliveries", sp.Name, m.Received)
		}
	}
	m := all(st)
	if want := planned(prog); m.Sent != want || m.Received != want || int64(len(truth.seen)) != want {
		t.Errorf("sent %d received %d broker %d, want %d", m.Sent, m.Received, len(truth.seen), want)
	}
	t.Logf("stages: %v (warmup %d)", perStage, warmup)
}

// TestRunBurst runs a burst plan on the embedded broker and checks from the
// broker's side that every burst carried exactly the group's messages, all
// with the burst's one intended time (the first burst's plus b seconds),
// and that mqplan's accounting is exact.
func TestRunBurst(t *testing.T) {
	prog, st, truth := runValidTruth(t, "burst.yaml", []string{"duration=2s"})
	truth.mu.Lock()
	defer truth.mu.Unlock()
	first := int64(-1)
	for _, at := range truth.seen {
		if first < 0 || at < first {
			first = at
		}
	}
	perBurst := map[int64]int{}
	for key, at := range truth.seen {
		pub := prog.Clients[key.pub].Publish
		k := int(key.seq) - 1
		want, ok := pub.Schedule.At(k)
		if !ok {
			t.Fatalf("message %d of client %d is not in its schedule", k, key.pub)
		}
		if at-first != int64(want) {
			t.Errorf("client %d message %d intended %v after the first burst, want %v", key.pub, k, time.Duration(at-first), want)
		}
		perBurst[int64(want/time.Second)]++
	}
	// warmup 500ms + 2s: bursts at 0, 1s and 2s.
	if len(perBurst) != 3 || perBurst[0] != 200 || perBurst[1] != 200 || perBurst[2] != 200 {
		t.Errorf("the broker received bursts %v, want 200 at each of 0, 1 and 2", perBurst)
	}
	m := all(st)
	if want := planned(prog); want != 600 || m.Sent != want || m.Received != want || m.Lost != 0 {
		t.Errorf("planned %d sent %d received %d lost %d, want 600, 600, 600, 0", want, m.Sent, m.Received, m.Lost)
	}
}

// TestRunPoisson runs Poisson arrivals over stages on the embedded broker
// and checks from the broker's side that it received exactly the messages
// the schedules count, stage by stage, each at its scheduled intended time
// relative to its client's first. The runner reads the schedules through
// cursors (cursors.go): the second case gives each client hundreds of
// messages, so that they cross the arrival tree's blocks of 256.
func TestRunPoisson(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{name: "as written"},
		{name: "across blocks", sets: []string{"stages[1].rate=6000/s", "stages[2].rate=6000/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testRunPoisson(t, tc.sets) })
	}
}

func testRunPoisson(t *testing.T, sets []string) {
	prog, st, truth := runValidTruth(t, "poisson.yaml", sets)
	truth.mu.Lock()
	defer truth.mu.Unlock()
	perStage := make([]int64, len(prog.Stages))
	for key, intended := range truth.seen {
		pub := prog.Clients[key.pub].Publish
		k := int(key.seq) - 1
		seg, ok := pub.Schedule.SegmentOf(k)
		if !ok {
			t.Fatalf("message %d of client %d is not in its schedule", k, key.pub)
		}
		if s := pub.Schedule.Profile.Segments()[seg].Stage; s >= 0 {
			perStage[s]++
		}
		first, ok := truth.seen[msgKey{key.pub, 1}]
		if !ok {
			t.Fatalf("the broker never received client %d's first message", key.pub)
		}
		at, _ := pub.Schedule.At(k)
		at0, _ := pub.Schedule.At(0)
		if intended-first != int64(at-at0) {
			t.Errorf("client %d message %d intended %dns after its first, the schedule says %v", key.pub, k, intended-first, at-at0)
		}
	}
	for i, sp := range prog.Stages {
		if perStage[i] != sp.Messages {
			t.Errorf("stage %s: the broker received %d, the schedule counts %d", sp.Name, perStage[i], sp.Messages)
		}
	}
	m := all(st)
	if want := planned(prog); m.Sent != want || m.Received != want || int64(len(truth.seen)) != want || m.Lost != 0 {
		t.Errorf("sent %d received %d broker %d lost %d, want %d", m.Sent, m.Received, len(truth.seen), m.Lost, want)
	}
	t.Logf("stages: %v", perStage)
}
