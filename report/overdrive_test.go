package report

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// overdriveRun is a run of one publishing group over a 2 s steady phase:
// sent and unsent messages, lag samples (the largest is lagMax), and the
// group's largest lag in each steady second.
type overdriveRun struct {
	sent, unsent int64
	lagMax       time.Duration
	perSecond    []time.Duration
	selfCPU      float64 // percent of one core, each second; 0: not sampled
	brokerCPU    float64 // the same for the broker's process
	procs        int
	embedded     bool
	// apart: the embedded broker ran in the --workers parent.
	apart       bool
	interrupted bool
}

func (o overdriveRun) stats() *stats.Stats {
	st := &stats.Stats{Phases: make([]stats.PhaseStats, phase.Count), Procs: o.procs, Interrupted: o.interrupted}
	for i, p := range phase.All {
		st.Phases[i] = stats.PhaseStats{Phase: p, Groups: make([]stats.Metrics, 1)}
	}
	steady := &st.Phases[phase.Steady]
	// Measured a little longer than planned: the grace a late publisher gets.
	steady.Start, steady.End = time.Second, 3250*time.Millisecond
	g := &steady.Groups[0]
	g.Sent, g.Unsent = o.sent, o.unsent
	g.Lag = stats.NewHistogram()
	_ = g.Lag.RecordValue(500)
	_ = g.Lag.RecordValue(o.lagMax.Microseconds())
	for i, lag := range o.perSecond {
		s := stats.Second{At: time.Duration(i+2) * time.Second, Phase: phase.Steady,
			Groups: []stats.GroupSecond{{Group: "pub", LagMax: lag}}}
		if o.selfCPU > 0 {
			s.Self = stats.ProcSample{Sampled: true, CPU: o.selfCPU}
		}
		if o.brokerCPU > 0 {
			s.Broker = stats.ProcSample{Sampled: true, CPU: o.brokerCPU}
		}
		st.Timeline = append(st.Timeline, s)
	}
	if o.embedded {
		st.Broker, st.BrokerApart = &stats.Broker{}, o.apart
	}
	return st
}

// TestOverdriveWarning checks the rule that says a schedule was not held:
// a real shortfall, a real lag, and a lag that grew, all three; and which
// side it blames.
func TestOverdriveWarning(t *testing.T) {
	open := &plans.Plan{Duration: 2 * time.Second, Groups: []plans.Group{{Name: "pub", Count: 1, Publish: &plans.Publish{Rate: 100000}}}}
	closed := &plans.Plan{Groups: []plans.Group{{Name: "pub", Count: 1, Publish: &plans.Publish{Max: true, Inflight: 1}}}}
	growing := []time.Duration{300 * time.Millisecond, 900 * time.Millisecond}
	tests := []struct {
		name string
		plan *plans.Plan
		run  overdriveRun
		want []string // "" for no warning
	}{
		{name: "healthy", plan: open, run: overdriveRun{sent: 200000, lagMax: 2 * time.Millisecond, perSecond: []time.Duration{time.Millisecond, time.Millisecond}}},
		{name: "saturated_broker", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, selfCPU: 60, procs: 2},
			want: []string{"the schedule was not held: the broker (or mqplan) is saturated at 60000 msg/s", "asked for 100000 msg/s", "40% of those messages were never sent (80,000)", "grew to 900ms", "the broker looks like the limit: mqplan used at most 60% CPU of the 2 CPUs"}},
		{name: "saturated_mqplan", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, selfCPU: 195, procs: 2},
			want: []string{"saturated at 60000 msg/s", "mqplan itself looks like the limit: it used 195% CPU", "97.5% of the 2 CPUs"}},
		{name: "mqplan_near_its_ceiling", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, selfCPU: 88, procs: 1, brokerCPU: 99.5},
			want: []string{"mqplan was near its ceiling too (88% CPU at its busiest steady second, 88% of the 1 CPU it could use, --procs), so either may be the limit", "the broker's process used at most 99.5% CPU in a steady second"}},
		{name: "neither_process_busy", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, selfCPU: 58, procs: 1, brokerCPU: 46},
			want: []string{"neither process was near its CPU ceiling (mqplan at most 58% of the 1 CPU it could use, --procs, the broker's process at most 46%"}},
		{name: "broker_busy", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, selfCPU: 50, procs: 2, brokerCPU: 98},
			want: []string{"the broker looks like the limit: mqplan used at most 50% CPU of the 2 CPUs", "the broker's process used at most 98% CPU"}},
		{name: "cpu_not_sampled", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, procs: 2},
			want: []string{"saturated at 60000 msg/s", "mqplan's own CPU was not sampled"}},
		{name: "embedded", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, selfCPU: 190, procs: 2, embedded: true},
			want: []string{"saturated at 60000 msg/s", "the embedded broker runs in mqplan's own process, which used at most 190% CPU"}},
		// --workers: the broker is the parent's, the CPU the workers'.
		{name: "embedded_in_the_workers_parent", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, selfCPU: 190, procs: 2, embedded: true, apart: true},
			want: []string{"mqplan itself looks like the limit: it used 190% CPU", "; the embedded broker ran in the --workers parent, apart from the workers, whose CPU alone is this"}},
		{name: "short_by_less_than_10pc", plan: open, run: overdriveRun{sent: 185000, unsent: 15000, lagMax: 900 * time.Millisecond, perSecond: growing}},
		{name: "unsent_without_lag_connections_lost", plan: open, run: overdriveRun{sent: 100000, unsent: 100000, lagMax: 20 * time.Millisecond, perSecond: []time.Duration{20 * time.Millisecond, 0}}},
		{name: "lag_shrinking_one_stall", plan: open, run: overdriveRun{sent: 150000, unsent: 50000, lagMax: 900 * time.Millisecond, perSecond: []time.Duration{900 * time.Millisecond, 5 * time.Millisecond}}},
		{name: "closed_loop_has_no_schedule", plan: closed, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing}},
		{name: "interrupted", plan: open, run: overdriveRun{sent: 120000, unsent: 80000, lagMax: 900 * time.Millisecond, perSecond: growing, interrupted: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := overdriveWarning(tc.plan, tc.run.stats())
			if len(tc.want) == 0 {
				if got != "" {
					t.Errorf("warned on a run that held its schedule (or had none):\n%s", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning lacks %q:\n%s", w, got)
				}
			}
			// Evaluate puts it first, above every other warning.
			r := Evaluate(tc.plan, nil, tc.run.stats())
			if len(r.Warnings) == 0 || r.Warnings[0] != got {
				t.Errorf("Evaluate's first warning is not the overdrive warning: %q", r.Warnings)
			}
		})
	}
}

// TestClosedLoopNotes checks the note a closed-loop group gets: its
// achieved rate and which clock its latency uses.
func TestClosedLoopNotes(t *testing.T) {
	p := &plans.Plan{Groups: []plans.Group{
		{Name: "max", Count: 1, Publish: &plans.Publish{QoS: 1, Max: true, Inflight: 4}},
		{Name: "q0", Count: 1, Publish: &plans.Publish{Max: true}},
		{Name: "open", Count: 1, Publish: &plans.Publish{Rate: 10}},
	}}
	st := &stats.Stats{Phases: make([]stats.PhaseStats, phase.Count)}
	steady := &st.Phases[phase.Steady]
	steady.Phase, steady.Start, steady.End = phase.Steady, 0, 2*time.Second
	steady.Groups = []stats.Metrics{{Sent: 5000}, {Sent: 300}, {Sent: 20}}
	got := closedLoopNotes(p, st)
	want := []string{
		"group max ran a closed loop (rate: max, inflight 4): it achieved 2500 msg/s in steady; the latency of its messages is service latency, from each message's actual send time, not from a schedule",
		"group q0 ran a closed loop (rate: max, each write after the previous one (QoS 0)): it achieved 150 msg/s in steady; the latency of its messages is service latency, from each message's actual send time, not from a schedule",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes\n got %q\nwant %q", got, want)
	}
}
