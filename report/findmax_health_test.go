package report

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// TestTrialHealth: what makes a completed run unreadable as a capacity
// signal, and what does not (a slow broker still answering).
func TestTrialHealth(t *testing.T) {
	plan := &plans.Plan{Groups: []plans.Group{{Name: "sub"}, {Name: "pub", Publish: &plans.Publish{QoS: 1}}}}
	// second builds one second of the timeline: pub sent and acked, sub received.
	second := func(at int, ph phase.Phase, sent, acked, recv int64) stats.Second {
		return stats.Second{At: time.Duration(at) * time.Second, Phase: ph,
			Groups: []stats.GroupSecond{{Group: "sub", Received: recv}, {Group: "pub", Sent: sent, Acked: acked}}}
	}
	plan0 := &plans.Plan{Groups: []plans.Group{{Name: "sub"}, {Name: "pub", Publish: &plans.Publish{QoS: 0}}}}
	expects0 := map[string]metric.Set{"pub": {metric.Expected: int64(400)}, "sub": {metric.Expected: int64(400)}}
	tests := []struct {
		name     string
		top      metric.Set
		gone     string
		timeline []stats.Second
		plan     *plans.Plan           // default plan (QoS 1)
		groups   map[string]metric.Set // the groups' measured figures
		want     []string              // parts of each reason, in order; none: healthy
	}{
		{name: "healthy", top: metric.Set{metric.ConnectFailed: int64(0), metric.Disconnects: int64(0)},
			timeline: []stats.Second{second(1, phase.Steady, 100, 100, 100), second(2, phase.Steady, 100, 100, 100)}},
		{name: "saturated but answering", timeline: []stats.Second{second(1, phase.Steady, 900, 10, 10), second(2, phase.Steady, 0, 5, 5),
			second(3, phase.Steady, 0, 1, 0), second(4, phase.Steady, 0, 0, 1), second(5, phase.Steady, 0, 3, 3)}},
		{name: "broker process exited", gone: "the broker process exited (found gone at 3s: x)", want: []string{"the broker process exited"}},
		{name: "connections refused", top: metric.Set{metric.ConnectFailed: int64(7)}, want: []string{"7 connections failed (connect.failed)"}},
		{name: "one disconnection", top: metric.Set{metric.Disconnects: int64(1), metric.ClientsLost: int64(1)}, want: []string{"1 unexpected disconnection (disconnects)"}},
		{name: "clients lost without a disconnection counted", top: metric.Set{metric.ClientsLost: int64(3)}, want: []string{"3 clients lost"}},
		{name: "stalled", timeline: []stats.Second{second(1, phase.Steady, 100, 100, 100), second(2, phase.Steady, 20, 0, 0),
			second(3, phase.Steady, 0, 0, 0), second(4, phase.Steady, 0, 0, 0)},
			want: []string{"answered nothing (no delivery, no acknowledgement) for 3 s or more from 1s while 20 publishes awaited"}},
		{name: "a pause shorter than a stall", timeline: []stats.Second{second(1, phase.Steady, 100, 100, 100), second(2, phase.Steady, 20, 0, 0),
			second(3, phase.Steady, 0, 0, 0), second(4, phase.Steady, 0, 20, 20)}},
		{name: "silence in drain is not a stall", timeline: []stats.Second{second(1, phase.Steady, 100, 90, 90), second(2, phase.Drain, 0, 0, 0),
			second(3, phase.Drain, 0, 0, 0), second(4, phase.Drain, 0, 0, 0)}},
		// QoS 0 has no acknowledgement: a broker that stops delivering
		// while QoS 0 publishes go on has stalled as surely.
		{name: "QoS 0 stalled", plan: plan0, groups: expects0, timeline: []stats.Second{second(1, phase.Steady, 100, 0, 100), second(2, phase.Steady, 100, 0, 0),
			second(3, phase.Steady, 100, 0, 0), second(4, phase.Steady, 0, 0, 0)},
			want: []string{"answered nothing (no delivery) for 3 s or more from 1s while 200 QoS 0 publishes awaited their delivery"}},
		{name: "QoS 0 slow but delivering", plan: plan0, groups: expects0, timeline: []stats.Second{second(1, phase.Steady, 100, 0, 100), second(2, phase.Steady, 100, 0, 0),
			second(3, phase.Steady, 100, 0, 0), second(4, phase.Steady, 100, 0, 5)}},
		{name: "QoS 0 at a low rate", plan: plan0, groups: expects0, timeline: []stats.Second{second(1, phase.Steady, 1, 0, 1), second(2, phase.Steady, 0, 0, 0),
			second(3, phase.Steady, 0, 0, 0), second(4, phase.Steady, 0, 0, 0), second(5, phase.Steady, 1, 0, 1)}},
		{name: "QoS 0 messages nobody subscribes to", plan: plan0, groups: map[string]metric.Set{"pub": {metric.Expected: int64(0)}},
			timeline: []stats.Second{second(1, phase.Steady, 100, 0, 0), second(2, phase.Steady, 100, 0, 0),
				second(3, phase.Steady, 100, 0, 0), second(4, phase.Steady, 100, 0, 0)}},
		{name: "everything at once", gone: "the broker process exited", top: metric.Set{metric.ConnectFailed: int64(2), metric.Disconnects: int64(200)},
			want: []string{"exited", "2 connections failed", "200 unexpected disconnections"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan
			if tt.plan != nil {
				p = tt.plan
			}
			r := &Result{Plan: p, BrokerGone: tt.gone, Timeline: tt.timeline, Measured: threshold.Measured{Top: tt.top, Groups: tt.groups}}
			got := TrialHealth(r)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %d reasons like %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("reason %d %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
