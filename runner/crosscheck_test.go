package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// outsiderAt is a Sync that, at barrier name, publishes n messages from
// a client outside the plan, once: traffic the broker counts and mqplan
// does not.
type outsiderAt struct {
	Sync
	name  string
	conn  *mqttc.Conn
	n     int
	t     *testing.T
	fired *bool
}

func (o outsiderAt) Barrier(ctx context.Context, name string, vals []int64, at time.Duration) ([]int64, time.Duration, error) {
	sums, at, err := o.Sync.Barrier(ctx, name, vals, at)
	if name == o.name && !*o.fired {
		*o.fired = true
		for range o.n {
			if err := o.conn.Publish(context.Background(), "outside/t", 0, false, []byte("x"), 0); err != nil {
				o.t.Errorf("the outsider's publish: %v", err)
			}
		}
	}
	return sums, at, err
}

// TestShardsCrossCheck: a run split in three is checked against the
// broker's own counters as one process is, once, on the merged figures
// (CrossCheck), since a shard's own counts are only a part of what the
// broker saw: against Mosquitto's $SYS (broker.metrics), a client outside
// the plan publishing 5 messages during the run gives the notice one
// process gives, "+5" exactly (the shards' writes summed), and a clean
// run none; against the embedded broker's counters (the --workers parent
// hosts it and gives them to the merge), the same outsider's 5 are
// named. No shard checks its part alone. Sharded runs had no
// cross-check at all.
func TestShardsCrossCheck(t *testing.T) {
	t.Parallel()
	if mosquittotest.Binary() == "" {
		t.Skip("mosquitto is not installed")
	}
	mosq := mosquittotest.StartProcess(t, mosquittotest.Options{Config: "sys_interval 1"})
	emb, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close(5 * time.Second)
	for _, tc := range []struct {
		name     string
		url      string
		embedded bool
		foreign  int
		want     string // fmt with the broker's figure and mqplan's; "" no notice
	}{
		{name: "mosquitto clean", url: mosq.MQTT},
		{name: "mosquitto outsider", url: mosq.MQTT, foreign: 5, want: "broker.metrics: the broker counted %d PUBLISH received during the run, but the PUBLISH packets mqplan wrote at QoS 0 or 1 without the retain flag (resends included; Mosquitto counts no QoS 2 or retained PUBLISH) were %d (+5): other clients published"},
		{name: "embedded outsider", url: emb.URL(), embedded: true, foreign: 5, want: "the embedded broker counted %d PUBLISH received, but mqplan wrote %d (resends included)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e2ePlan(4, 1, time.Second)
			p.Drain = time.Second
			if !tc.embedded {
				p.Broker.Metrics = &plans.BrokerMetrics{Sys: true}
			}
			p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
			prog := compile(t, p)
			targets, err := mqttc.NewTargets([]string{tc.url}, nil)
			if err != nil {
				t.Fatal(err)
			}
			other, err := mqttc.Dial(context.Background(), targets[0], mqttc.Options{ClientID: "outsider", CleanStart: true, Timeout: 5 * time.Second, Version: mqttc.Version311}, func() int64 { return 0 }, mqttc.Handlers{})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			before := emb.Stats()
			fired := false
			st, shards := runShards(t, prog, 3, tc.url, func(i int, s Sync) Sync {
				if i == 0 {
					// Once publishing is over: inside the broker
					// counters' window, outside mqplan's counts.
					return outsiderAt{Sync: s, name: "expect", conn: other, n: tc.foreign, t: t, fired: &fired}
				}
				return s
			})
			for i, s := range shards {
				if got := crossNotices(s); len(got) > 0 {
					t.Errorf("shard %d checked its part alone: %q", i, got)
				}
			}
			m := all(st)
			var want string
			if tc.embedded {
				// What the --workers parent does with the broker it hosts.
				// The broker serves one subtest at a time: its counters'
				// change is this run's.
				bs := emb.Stats()
				bs.MessagesReceived -= before.MessagesReceived
				bs.MessagesSent -= before.MessagesSent
				st.Broker = &bs
				if tc.want != "" {
					want = fmt.Sprintf(tc.want, bs.MessagesReceived, m.Sent)
				}
			} else if tc.want != "" {
				recv, ok := delta(st, brokerstat.PublishReceived)
				if !ok {
					t.Fatalf("no PUBLISH received at both ends: start %+v end %+v", st.CountersStart, st.CountersEnd)
				}
				want = fmt.Sprintf(tc.want, recv, m.Sent)
			}
			got := CrossCheck(prog, st)
			switch {
			case want == "" && len(got) > 0:
				t.Errorf("a clean run split in three warns: %q", got)
			case want != "" && !slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, want) }),
				tc.embedded && len(got) != 1:
				t.Errorf("cross-check notices %q, want one containing %q", got, want)
			}
		})
	}
}
