package runner

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/plans"
)

// TestShardNoticesCount: a broker that downgrades QoS for every client
// of a run split in three: the merged report's notices add up to the
// whole run (every subscriber, every publish), as one process's would.
// A merge keeps one copy of equal notices, so two shards' "2 of 4
// clients" once read as half the group downgraded.
func TestShardNoticesCount(t *testing.T) {
	one := byte(1)
	p := onProtocol(e2ePlan(4, 2, 500*time.Millisecond), 4)
	p.Drain = 2 * time.Second
	p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
	prog := compile(t, p)
	b, err := broker.Start(broker.Options{MaximumQoS: &one})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	st, _ := runShards(t, prog, 3, b.URL())
	m := all(st)
	subs := regexp.MustCompile(`^group sub: asked QoS 2, the broker granted QoS 1 \((\d+) of (\d+) clients of shard \d/3, of the group's 4\)`)
	pubs := regexp.MustCompile(`^group pub: (\d+) QoS 2 publishes of shard \d/3 were acknowledged with PUBACK`)
	var subsDown, subsOwn, pubsDown int64
	for _, n := range st.Notices {
		if g := subs.FindStringSubmatch(n); g != nil {
			k, _ := strconv.ParseInt(g[1], 10, 64)
			own, _ := strconv.ParseInt(g[2], 10, 64)
			subsDown, subsOwn = subsDown+k, subsOwn+own
		}
		if g := pubs.FindStringSubmatch(n); g != nil {
			k, _ := strconv.ParseInt(g[1], 10, 64)
			pubsDown += k
		}
	}
	if subsDown != 4 || subsOwn != 4 {
		t.Errorf("the notices count %d downgraded subscribers of %d, want 4 of 4: %q", subsDown, subsOwn, st.Notices)
	}
	if m.Sent == 0 || pubsDown != m.Sent {
		t.Errorf("the notices count %d downgraded publishes, the run sent %d: %q", pubsDown, m.Sent, st.Notices)
	}
	if m.QoSDowngrades != 4+m.Sent {
		t.Errorf("qos_downgrades %d, want 4 subscriptions + %d publishes", m.QoSDowngrades, m.Sent)
	}
}
