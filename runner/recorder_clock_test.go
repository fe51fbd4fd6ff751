package runner

import (
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
)

// TestShardedReceiveSplitsByShard: in a sharded run a delivery is counted
// by its publisher's shard, with its least latency, and a cross-shard
// one's latency lands in LatencyCross too, without allocating once the
// cell's histogram exists; in a single process nothing of it is kept.
func TestShardedReceiveSplitsByShard(t *testing.T) {
	tests := []struct {
		name             string
		sharded          bool
		pubShard, self   int
		wantCross, pairs bool
	}{
		{"single process", false, 0, 0, false, false},
		{"publisher on another shard", true, 1, 0, true, true},
		{"publisher on this shard", true, 0, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, sub, buf := hotRun(t, 1000)
			r.epoch = r.epoch.Add(-time.Second) // every message intended after the epoch
			r.epochWall = r.epoch.UnixNano()
			pub := &r.prog.Clients[1]
			if tt.sharded {
				of := make([]int32, len(r.prog.Clients))
				of[pub.Index] = int32(tt.pubShard)
				of[sub.plan.Index] = int32(tt.self)
				r.sh.shard = &Shard{Index: tt.self, Count: 2, ShardOf: of}
				r.rec.withShards(tt.self, 2)
			}
			seq := uint32(0)
			step := func() {
				seq++
				encodePayload(buf, r.pattern, uint32(pub.Index), seq, r.epochWall+r.now()-int64(time.Millisecond))
				r.receive(sub, buf, false)
			}
			step() // the cells' first samples allocate their histograms
			if n := testing.AllocsPerRun(200, step); n != 0 {
				t.Errorf("%v allocations per delivery", n)
			}
			var received, cross int64
			for _, ph := range r.rec.merge() {
				if h := ph.Total.Latency; h != nil {
					received += h.TotalCount()
				}
				if h := ph.Total.LatencyCross; h != nil {
					cross += h.TotalCount()
				}
				if ph.Phase == phase.Steady && ph.Total.LatencyCross != nil && ph.Total.LocalLatency().TotalCount() != 0 {
					t.Errorf("local latency of cross-shard deliveries: %d samples", ph.Total.LocalLatency().TotalCount())
				}
			}
			if received != int64(seq) {
				t.Fatalf("received %d of %d", received, seq)
			}
			if want := map[bool]int64{true: received}[tt.wantCross]; cross != want {
				t.Errorf("cross-shard samples %d, want %d", cross, want)
			}
			c := r.rec.shardPairs()
			if (c != nil) != tt.pairs {
				t.Fatalf("pairs %+v, want kept %v", c, tt.pairs)
			}
			if c == nil {
				return
			}
			for _, p := range c.Pairs {
				want := int64(0)
				if p.From == tt.pubShard {
					want = received
				}
				if p.To != tt.self || p.Deliveries != want {
					t.Errorf("pair %+v: want to %d, %d deliveries", p, tt.self, want)
				}
				if want > 0 && (p.Min < time.Millisecond || p.Min > time.Second) {
					t.Errorf("pair %d→%d least latency %v, want about 1ms (sent 1ms before it arrived)", p.From, p.To, p.Min)
				}
			}
		})
	}
}
