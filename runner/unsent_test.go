package runner

import (
	"context"
	"github.com/mqplan/mqplan/phase"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
)

// phaseKicker makes the broker drop every client whose id contains match
// at the first progress report of phase.
type phaseKicker struct {
	phase phase.Phase
	match string
	b     *broker.Broker
	once  sync.Once
}

func (k *phaseKicker) started(b *broker.Broker) { k.b = b }

func (k *phaseKicker) progress(p Progress) {
	if p.Phase == k.phase {
		k.once.Do(func() { k.b.Kick(k.match) })
	}
}

// TestUnsentInEveryPhase checks that the schedule is the truth in every
// publishing phase: sent + unsent is what the schedule called for, and
// each unsent one-to-one message is an expected delivery lost as unsent,
// whether the publishers run to the end or are kicked in warmup.
func TestUnsentInEveryPhase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kick bool
	}{
		{"no fault: everything sent", false},
		{"publishers kicked in warmup: the rest of warmup, ramp and steady unsent", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e2ePlan(4, 1, time.Second)
			p.Warmup, p.Ramp, p.Drain = 1500*time.Millisecond, time.Second, time.Second
			prog := compile(t, p)
			k := &phaseKicker{phase: phase.Warmup, match: "-pub-"}
			var o Options
			var hooks []func(*broker.Broker)
			if tt.kick {
				o.Progress = k.progress
				hooks = append(hooks, k.started)
			}
			st, _ := runWith(t, prog, broker.Options{}, o, hooks...)
			for _, name := range []phase.Phase{phase.Warmup, phase.Ramp, phase.Steady} {
				want := prog.Phases[name].Messages
				m := st.Phase(name).Total
				if m.Sent+m.Unsent != want {
					t.Errorf("%s: sent %d + unsent %d = %d, the schedule called for %d", name, m.Sent, m.Unsent, m.Sent+m.Unsent, want)
				}
				if m.Expected != want || m.LostUnsent != m.Unsent {
					t.Errorf("%s: expected %d (want %d), lost_unsent %d for %d unsent", name, m.Expected, want, m.LostUnsent, m.Unsent)
				}
				if !tt.kick && (m.Unsent != 0 || m.Lost != 0) {
					t.Errorf("%s: unsent %d lost %d on a clean run", name, m.Unsent, m.Lost)
				}
				if tt.kick && name != phase.Warmup && m.Sent != 0 {
					t.Errorf("%s: %d sent by publishers kicked in warmup", name, m.Sent)
				}
			}
			if got := all(st).ClientsLost; tt.kick && got != 4 || !tt.kick && got != 0 {
				t.Errorf("clients lost %d", got)
			}
		})
	}
}

// TestLostUnacked checks the loss breakdown when the broker takes a QoS 1
// message without acknowledging it and drops its publisher: that message's
// delivery is lost unacknowledged (not by the broker, which never said it
// had it), what the schedule still held is lost unsent, and nothing the
// broker acknowledged is lost.
func TestLostUnacked(t *testing.T) {
	prog := compile(t, e2ePlan(4, 1, 2*time.Second))
	prog.Drain = time.Second
	h := &swallowHook{match: "-pub-", at: 10, seen: map[string]int{}}
	st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{h}}, Options{})
	m := all(st)
	if m.LostUnacked < 4 {
		t.Errorf("lost unacked %d, want at least the 4 swallowed messages", m.LostUnacked)
	}
	if m.Lost != m.LostUnsent+m.LostUnacked {
		t.Errorf("lost %d = unsent %d + unacked %d + %d by the broker, which acknowledged nothing it lost", m.Lost, m.LostUnsent, m.LostUnacked, m.Lost-m.LostUnsent-m.LostUnacked)
	}
	if m.Unsent == 0 || m.ClientsLost != 4 {
		t.Errorf("unsent %d clients lost %d", m.Unsent, m.ClientsLost)
	}
}

// TestInterruptDuringDrain checks that an interruption while drain waits
// for deliveries (held 30 s by the broker here) cuts drain short: the run
// returns within the interrupt drain, not after the plan's 60 s drain.
func TestInterruptDuringDrain(t *testing.T) {
	p := e2ePlan(2, 1, 500*time.Millisecond)
	p.Drain = time.Minute
	prog := compile(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := broker.Start(broker.Options{Faults: broker.Faults{Delay: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(time.Second)
	var cancelledAt time.Time
	var once sync.Once
	st, err := Run(ctx, prog, Options{BrokerURL: b.URL(), InterruptDrain: 500 * time.Millisecond, Progress: func(pr Progress) {
		if pr.Phase == phase.Drain {
			once.Do(func() { cancelledAt = time.Now(); cancel() })
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if cancelledAt.IsZero() {
		t.Fatal("the run never reported the drain phase")
	}
	// The interrupt drain (0.5 s) and the disconnect (bounded by 5 s, and
	// quick here) are all that may follow the interruption.
	if took := time.Since(cancelledAt); took > 3*time.Second {
		t.Errorf("the run took %v after the interruption during drain", took)
	}
	if !st.Interrupted {
		t.Error("not marked interrupted")
	}
}

// TestStuckWriteReleased pauses Mosquitto while publishers send 256 KiB
// messages at QoS 0: their socket buffers fill and their writes block. The
// run must still end (stop releases a writer stuck in a write), counting
// what was never written as unsent.
func TestStuckWriteReleased(t *testing.T) {
	m := mosquittotest.StartProcess(t, mosquittotest.Options{})
	p := e2ePlan(2, 0, 2*time.Second)
	p.Groups[1].Publish.Size = 256 << 10
	p.Groups[1].Publish.Every = 10 * time.Millisecond
	p.Drain = time.Second
	prog := compile(t, p)
	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Run(ctx, prog, Options{BrokerURL: m.MQTT, Progress: func(pr Progress) {
		if pr.Phase == phase.Steady {
			once.Do(m.Pause)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run did not end by itself within a minute")
	}
	steady := st.Phase(phase.Steady).Total
	want := prog.Phases[4].Messages
	if steady.Unsent == 0 || steady.Sent+steady.Unsent != want {
		t.Errorf("steady sent %d + unsent %d, the schedule called for %d, want some unsent", steady.Sent, steady.Unsent, want)
	}
}
