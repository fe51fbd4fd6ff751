package report

import (
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// TestHeaderWording: the header names an embedded broker as such with
// its address, shows a warmup or ramp the plan leaves out as 0s rather
// than the nanoseconds the run took to pass it, and the generator-lag
// warning names mqplan's own CPU and, when low, the likely cause.
func TestHeaderWording(t *testing.T) {
	embedded := &plans.Plan{Broker: plans.Broker{URLs: []string{plans.Embedded}}, Ramp: 3 * time.Second}
	external := &plans.Plan{Broker: plans.Broker{URLs: []string{"mqtt://u:secret@broker.example:1883"}}}
	t.Run("broker label", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			r    Result
			want string
		}{
			{"embedded", Result{Plan: embedded, BrokerURL: "mqtt://127.0.0.1:35833"}, "embedded (127.0.0.1:35833)"},
			{"external, redacted", Result{Plan: external, BrokerURL: "mqtt://u:secret@broker.example:1883"}, "mqtt://u:***@broker.example:1883"},
			{"no plan", Result{BrokerURL: "mqtt://127.0.0.1:1883"}, "mqtt://127.0.0.1:1883"},
			{"none", Result{Plan: embedded}, "-"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if got := tt.r.brokerLabel(); got != tt.want {
					t.Errorf("brokerLabel() = %q, want %q", got, tt.want)
				}
			})
		}
	})
	t.Run("phase length", func(t *testing.T) {
		r := Result{Plan: embedded}
		for _, tt := range []struct {
			name string
			ph   PhaseSpan
			want time.Duration
		}{
			{"a warmup the plan leaves out", PhaseSpan{Phase: phase.Warmup, Start: 10, End: 431}, 0},
			{"a ramp the plan has", PhaseSpan{Phase: phase.Ramp, Start: 431, End: 3*time.Second + 431}, 3 * time.Second},
			{"steady", PhaseSpan{Phase: phase.Steady, Start: 0, End: 421}, 421},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if got := r.shownLength(tt.ph); got != tt.want {
					t.Errorf("shownLength = %v, want %v", got, tt.want)
				}
			})
		}
	})
	t.Run("lag cause", func(t *testing.T) {
		self := func(cpu ...float64) []stats.Second {
			var s []stats.Second
			for _, c := range cpu {
				s = append(s, stats.Second{Self: stats.ProcSample{Sampled: true, CPU: c}})
			}
			return s
		}
		for _, tt := range []struct {
			name     string
			timeline []stats.Second
			want     string
		}{
			{"not sampled", []stats.Second{{}}, ""},
			{"starved", self(10, 14), "; mqplan's own CPU was 12% of one core (mean; busiest second 14%): another process likely held the CPU"},
			{"busy", self(90, 130), "; mqplan's own CPU was 110% of one core (mean; busiest second 130%)"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if got := selfCPUCause(tt.timeline); got != tt.want {
					t.Errorf("selfCPUCause = %q, want %q", got, tt.want)
				}
			})
		}
	})
}
