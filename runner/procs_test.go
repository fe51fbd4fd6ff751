package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/procstat"
	"github.com/mqplan/mqplan/stats"
)

// TestProcessSamples: every second of a run against Mosquitto, with
// broker.metrics naming it, carries the broker's and mqplan's CPU and
// memory; once the broker is gone its samples stop and a notice says so.
func TestProcessSamples(t *testing.T) {
	p := mosquittotest.StartProcess(t, mosquittotest.Options{})
	tests := []struct {
		name string
		// killAfter kills Mosquitto once this many seconds were taken
		// (0: never).
		killAfter int
	}{
		{name: "sampled every second"},
		{name: "broker killed during the run", killAfter: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := e2ePlan(2, 1, 2*time.Second)
			pl.Broker.URLs = []string{p.MQTT}
			pl.Broker.Metrics = &plans.BrokerMetrics{PID: p.PID()}
			var mu sync.Mutex
			seconds := 0
			opts := Options{Second: func(stats.Second) {
				mu.Lock()
				defer mu.Unlock()
				if seconds++; seconds == tt.killAfter {
					p.Kill()
				}
			}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := Run(ctx, compile(t, pl), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Timeline) < 3 {
				t.Fatalf("only %d seconds", len(st.Timeline))
			}
			for i, s := range st.Timeline {
				// A second too short for a CPU figure (the last,
				// partial one) is not sampled; a few ms of leeway for
				// the sampler's clock, read just after the second's.
				window := s.At
				if i > 0 {
					window -= st.Timeline[i-1].At
				}
				short := window < procstat.MinCPUWindow-5*time.Millisecond
				unsure := !short && window < procstat.MinCPUWindow+5*time.Millisecond
				if short && (s.Self.Sampled || s.Broker.Sampled) {
					t.Errorf("second %d of %v: self %+v broker %+v, want unsampled (shorter than %v)", i, window, s.Self, s.Broker, procstat.MinCPUWindow)
				}
				if short || unsure {
					continue
				}
				if !s.Self.Sampled || s.Self.RSS < 1<<20 || s.Self.CPU < 0 {
					t.Errorf("second %d: self %+v, want sampled, RSS > 1 MB", i, s.Self)
				}
				wantBroker := tt.killAfter == 0 || i < tt.killAfter
				if s.Broker.Sampled != wantBroker {
					t.Errorf("second %d: broker sampled %v, want %v", i, s.Broker.Sampled, wantBroker)
				}
				if s.Broker.Sampled && (s.Broker.RSS < 1<<20 || s.Broker.CPU < 0) {
					t.Errorf("second %d: broker %+v, want RSS > 1 MB and CPU >= 0", i, s.Broker)
				}
			}
			noticed := false
			for _, n := range st.Notices {
				noticed = noticed || strings.HasPrefix(n, "broker metrics stopped at") && strings.Contains(n, "no such process")
			}
			if noticed != (tt.killAfter > 0) {
				t.Errorf("notices %q: want a broker-gone notice %v", st.Notices, tt.killAfter > 0)
			}
			if gone := strings.HasPrefix(st.BrokerGone, "the broker process exited"); gone != (tt.killAfter > 0) {
				t.Errorf("BrokerGone %q, want it set %v", st.BrokerGone, tt.killAfter > 0)
			}
			if tt.killAfter > 0 {
				p.Restart()
			}
		})
	}
}

// TestProcessSamplesUnknownBroker: a broker process that cannot be found
// makes the run incomplete before anything connects.
func TestProcessSamplesUnknownBroker(t *testing.T) {
	tests := []struct {
		name    string
		metrics plans.BrokerMetrics
		want    string
	}{
		{"no such pid", plans.BrokerMetrics{PID: 1 << 22}, "broker.metrics: pid 4194304: /proc/4194304: no such process"},
		{"no such name", plans.BrokerMetrics{Process: "mqplan-nothing"}, `broker.metrics: process "mqplan-nothing": no running process has that name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := e2ePlan(1, 0, time.Second)
			pl.Broker.Metrics = &tt.metrics
			st, _ := runWith(t, compile(t, pl), broker.Options{}, Options{})
			if st.Incomplete != tt.want {
				t.Errorf("incomplete %q, want %q", st.Incomplete, tt.want)
			}
			if len(st.Timeline) != 0 || all(st).ConnectAttempts != 0 {
				t.Errorf("the run went on: %d seconds, %d connects", len(st.Timeline), all(st).ConnectAttempts)
			}
		})
	}
}

// TestProcessSamplesZombieBroker: a broker process that dies while its
// parent has not reaped it (a zombie, still in /proc) is gone from the
// sample where it died: no RSS-0, CPU-0 seconds after it, and the notice
// names that second, not a later one when it was reaped. The "broker" is a
// child of the test (sleep) that the test kills and reaps only after the
// run, the MQTT broker the embedded one.
func TestProcessSamplesZombieBroker(t *testing.T) {
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p, err := os.StartProcess(bin, []string{"sleep", "60"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
	pl := e2ePlan(1, 0, 3*time.Second)
	pl.Broker.Metrics = &plans.BrokerMetrics{PID: p.Pid}
	var mu sync.Mutex
	var killedAt time.Duration // the At of the second after which it was killed
	opts := Options{Second: func(s stats.Second) {
		mu.Lock()
		defer mu.Unlock()
		if killedAt == 0 && s.Broker.Sampled {
			killedAt = s.At
			_ = p.Signal(syscall.SIGKILL) // and no Wait: a zombie
		}
	}}
	st, _ := runWith(t, compile(t, pl), broker.Options{}, opts)
	mu.Lock()
	defer mu.Unlock()
	if killedAt == 0 {
		t.Fatalf("the broker process was never sampled: %+v", st.Timeline)
	}
	for i, s := range st.Timeline {
		if s.At > killedAt && s.Broker.Sampled {
			t.Errorf("second %d (%v): broker %+v sampled after it was killed at %v", i, s.At, s.Broker, killedAt)
		}
	}
	// The kill lands before the next second is taken (the signal is
	// delivered at once; the zombie is in /proc within the second),
	// so the notice names the second after killedAt.
	want := fmt.Sprintf("broker metrics stopped at %s: /proc/%d: no such process: it exited and is a zombie", (killedAt + time.Second).Round(time.Second), p.Pid)
	noticed := false
	for _, n := range st.Notices {
		noticed = noticed || strings.HasPrefix(n, want)
	}
	if !noticed {
		t.Errorf("notices %q: want one starting %q", st.Notices, want)
	}
}
