package runner

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/natstest"
	"github.com/mqplan/mqplan/phase"
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

// slowExpect forgets the answer of the expect barrier (after taking
// part in it), so that its shard's drain runs to its limit while the
// others' end as soon as their deliveries are in: a shard still draining.
type slowExpect struct{ Sync }

func (s slowExpect) Barrier(ctx context.Context, name string, vals []int64, at time.Duration) ([]int64, time.Duration, error) {
	sums, at, err := s.Sync.Barrier(ctx, name, vals, at)
	if name == "expect" && err == nil {
		return nil, 0, errors.New("forgotten")
	}
	return sums, at, err
}

// TestShardWatchesBrokerAsOne: in a run split in three with
// broker.metrics sys, shard 1 still draining (to its 2 s limit) when the
// others are done, the broker is watched as one process watches it: one
// $SYS monitor (the broker's own peak of clients is the plan's plus one;
// a monitor per shard counted as clients and as $SYS receivers in the
// broker's figures that thresholds judge), shard 0's, which reads the
// counters at the end only once every shard has drained (at its own end,
// they missed what the broker did for a shard still draining), and the
// merged report has them at both ends.
func TestShardWatchesBrokerAsOne(t *testing.T) {
	p := e2ePlan(4, 1, 500*time.Millisecond)
	p.Drain = 2 * time.Second
	p.Broker.Metrics = &plans.BrokerMetrics{Sys: true}
	p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
	prog := compile(t, p)
	b, err := broker.Start(broker.Options{SysInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	st, shards := runShards(t, prog, 3, b.URL(), func(i int, s Sync) Sync {
		if i == 1 {
			return slowExpect{s}
		}
		return s
	})
	if got, want := b.Stats().ClientsMaximum, int64(len(prog.Clients)+1); got != want {
		t.Errorf("the broker's peak of clients %d, want %d: the plan's and one monitor", got, want)
	}
	for i, s := range shards {
		if s.CountersStart.Sampled() != (i == 0) || s.CountersEnd.Sampled() != (i == 0) {
			t.Errorf("shard %d: broker counters sampled %v at the start, %v at the end: want only shard 0's", i, s.CountersStart.Sampled(), s.CountersEnd.Sampled())
		}
	}
	if !st.CountersStart.Sampled() || !st.CountersEnd.Sampled() {
		t.Errorf("the merged run lacks the broker's counters: start %v, end %v", st.CountersStart.Sampled(), st.CountersEnd.Sampled())
	}
	d0, d1 := shards[0].Phases[phase.Drain], shards[1].Phases[phase.Drain]
	if d1.End-d1.Start < p.Drain || d0.End-d0.Start >= p.Drain {
		t.Fatalf("drains of %v and %v: the test wants shard 1's at its %v limit and shard 0's shorter", d0.End-d0.Start, d1.End-d1.Start, p.Drain)
	}
	// Both offsets are from the run's common epoch, reached on each
	// shard's monotonic clock: ms apart in one process.
	if shards[0].Elapsed < d1.End {
		t.Errorf("shard 0 read the broker's end counters by %v, before shard 1 had drained (%v)", shards[0].Elapsed, d1.End)
	}
}

// TestShardSilentShare: a share group on one shard whose publisher is
// another's is judged as one process judges it: on a broker without
// shared subscriptions (NATS takes $share/... for a plain topic) the
// shard that owns the group notes that it heard nothing, its publisher
// being the other shard's (it used to be the publisher's shard that
// noted it, by chance); on one with them (the embedded broker) no shard
// notes it (the publisher's shard, which owns no member of the group, did,
// so every sharded run with $share warned falsely).
func TestShardSilentShare(t *testing.T) {
	t.Parallel()
	emb, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close(5 * time.Second)
	nats := natstest.Start(t)
	for _, tc := range []struct {
		name, url string
		silent    bool
	}{
		{"no shared subscriptions", nats, true},
		{"shared subscriptions", emb.URL(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := onProtocol(e2ePlan(1, 1, time.Second), 4)
			p.Drain = time.Second
			p.Groups[0].Subscribe[0].Topic = plans.MustTemplate("$share/g/e2e/#")
			p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
			prog := compile(t, p)
			st, shards := runShards(t, prog, 2, tc.url)
			const silent = `shared subscription "$share/g/e2e/#" received nothing: the broker may not support shared subscriptions`
			m := all(st)
			if hasNotice(st, silent) != tc.silent || m.Expected == 0 || (m.Received == 0) != tc.silent {
				t.Errorf("notices %q with %d received of %d expected: want the notice %v", st.Notices, m.Received, m.Expected, tc.silent)
			}
			if tc.silent && !hasNotice(shards[0], silent) {
				t.Errorf("shard 0, the group's, did not note its silence: notices %q", shards[0].Notices)
			}
		})
	}
}

// TestShardOneBrokerProcessWatcher: broker.metrics naming the broker's
// process is shard 0's to sample, as its $SYS monitor is: the process is
// on one host, and on another shard's host the pid is another process or
// none (a shard that looked for it there failed the run before it
// connected). Here every shard sees the same pid (this test's own
// process), so only where it is sampled tells.
func TestShardOneBrokerProcessWatcher(t *testing.T) {
	t.Parallel()
	p := e2ePlan(4, 1, 500*time.Millisecond)
	p.Broker.Metrics = &plans.BrokerMetrics{PID: os.Getpid()}
	p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
	prog := compile(t, p)
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	st, shards := runShards(t, prog, 3, b.URL())
	for i, s := range shards {
		if s.Incomplete != "" {
			t.Fatalf("shard %d incomplete: %s", i, s.Incomplete)
		}
		sampled := 0
		for _, sec := range s.Timeline {
			if sec.Broker.Sampled {
				sampled++
			}
		}
		if (sampled > 0) != (i == 0) {
			t.Errorf("shard %d sampled the broker process in %d seconds: want only shard 0's", i, sampled)
		}
	}
	merged := 0
	for _, sec := range st.Timeline {
		if sec.Broker.Sampled {
			merged++
		}
	}
	if merged == 0 {
		t.Error("the merged run has no sample of the broker process")
	}
}
