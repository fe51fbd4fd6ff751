package report

import (
	"slices"
	"testing"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// TestListenWarnings checks what the report says of a subscribing group
// that received nothing in a plan that only listens (mqplan sub): the
// $share hint for each shared filter, one line for the plain ones, and
// nothing where something arrived, where the plan publishes (lost says
// it) or where the run is incomplete (its reason says it).
func TestListenWarnings(t *testing.T) {
	const share = `shared subscription "$share/g/bench/#" received nothing: the broker may not support shared subscriptions (NATS, RabbitMQ and aedes take $share/... as a literal topic)`
	const plain = `group sub received nothing on "a/#", "b": nothing was published to a matching topic while it listened, or the broker did not deliver it`
	sub := func(filters ...string) plans.Group {
		g := plans.Group{Name: "sub", Count: 2}
		for _, f := range filters {
			g.Subscribe = append(g.Subscribe, plans.Subscription{Topic: plans.MustTemplate(f)})
		}
		return g
	}
	pub := plans.Group{Name: "pub", Count: 1, Publish: &plans.Publish{Topic: plans.MustTemplate("bench/%i")}}
	tests := []struct {
		name       string
		groups     []plans.Group
		received   []int64 // steady-phase deliveries, by group
		incomplete string
		want       []string
	}{
		{"shared filter, nothing: the hint", []plans.Group{sub("$share/g/bench/#")}, []int64{0}, "", []string{share}},
		{"plain filters, nothing: one line naming them", []plans.Group{sub("a/#", "b")}, []int64{0}, "", []string{plain}},
		{"both kinds: both", []plans.Group{sub("a/#", "$share/g/bench/#", "b")}, []int64{0}, "", []string{share, plain}},
		{"something arrived: nothing to say", []plans.Group{sub("$share/g/bench/#")}, []int64{3}, "", nil},
		{"a publisher in the plan: lost says it", []plans.Group{sub("$share/g/bench/#"), pub}, []int64{0, 0}, "", nil},
		{"incomplete: its reason says it", []plans.Group{sub("a/#", "b")}, []int64{0}, "group sub: none of its 2 clients could subscribe", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plans.Plan{Groups: tt.groups}
			st := &stats.Stats{Incomplete: tt.incomplete, Phases: make([]stats.PhaseStats, phase.Count)}
			steady := &st.Phases[phase.Steady]
			for _, n := range tt.received {
				steady.Groups = append(steady.Groups, stats.Metrics{Received: n})
			}
			if got := listenWarnings(p, st); !slices.Equal(got, tt.want) {
				t.Errorf("warnings:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}
