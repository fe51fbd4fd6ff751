package runner

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/coord"
	"github.com/mqplan/mqplan/partial"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// runShards runs prog split among n shards in this process, each with its
// own runner and its own connection to a real coordinator on loopback, and
// returns the merged stats, as mqplan run --shard and the coordinator's
// merge would, and each shard's own.
//
// wrap, when given, stands between shard i and the coordinator.
func runShards(t *testing.T, prog *plans.Program, n int, url string, wrap ...func(i int, s Sync) Sync) (*stats.Stats, []*stats.Stats) {
	t.Helper()
	a, err := plans.Assign(prog, n)
	if err != nil {
		t.Fatal(err)
	}
	if a.CrossDeliveries == 0 {
		t.Fatal("no delivery crosses shards: the test would not test the exchange")
	}
	hello := coord.Hello{N: n, RunID: "t", PlanSHA256: "p", AssignSHA256: a.Hash, Version: "test"}
	co, err := coord.Listen("127.0.0.1:0", coord.Config{Hello: hello, JoinTimeout: 10 * time.Second, EpochDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type served struct {
		res *coord.Result
		err error
	}
	done := make(chan served, 1)
	go func() {
		res, err := co.Serve(ctx)
		done <- served{res, err}
	}()
	var wg sync.WaitGroup
	errs := make([]error, n)
	shards := make([]*stats.Stats, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hello
			h.Shard = i
			sh, err := coord.Join(ctx, co.Addr(), h, nil, 10*time.Second, 0)
			if err != nil {
				errs[i] = err
				return
			}
			defer sh.Close()
			col := partial.NewCollector()
			var via Sync = sh
			for _, w := range wrap {
				via = w(i, via)
			}
			st, err := Run(ctx, prog, Options{BrokerURL: url, Latency: col.Latency, Second: col.Second,
				Shard: &Shard{Index: i, Count: n, Owned: a.Mask(i), ExpectedByShard: a.ExpectedByShard, Sync: via}})
			if err != nil {
				errs[i] = err
				return
			}
			shards[i] = st
			f, err := partial.FromStats(st, col, partial.Meta{RunID: "t",
				Plan:  partial.PlanSource{File: "p.yaml", Source: "x"},
				Shard: partial.Shard{Index: i, Count: n, Assignment: a.Version, AssignSHA256: a.Hash}})
			if err != nil {
				errs[i] = err
				return
			}
			var b bytes.Buffer
			if err := partial.Write(&b, f); err != nil {
				errs[i] = err
				return
			}
			errs[i] = sh.HandIn(b.Bytes(), 10*time.Second)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	files := make([]*partial.File, n)
	for i, data := range s.res.Parts {
		if files[i], err = partial.Parse("part", data); err != nil {
			t.Fatalf("shard %d's part: %v", i, err)
		}
	}
	m, err := partial.Merge(files, partial.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m.Stats, shards
}

// TestShardsAccountExactly: a run split among three shards (striped, so
// that every publisher's subscriber is on another shard), against a
// broker that drops and duplicates deliveries or does not, counts what the
// broker's own fault counters say it did: every message sent once, every
// drop a loss, every copy a duplicate, none foreign, none unexpected. With
// nothing lost, every shard's drain ends as soon as the deliveries the
// others sent it are in (a quiet period measured), not at its limit.
func TestShardsAccountExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults broker.Faults
	}{
		{"clean", broker.Faults{}},
		{"drop and duplicate", broker.Faults{DropEvery: 7, DuplicateEvery: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e2ePlan(4, 1, 600*time.Millisecond)
			p.Drain = 2 * time.Second
			p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
			prog := compile(t, p)
			b, err := broker.Start(broker.Options{Faults: tc.faults})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(5 * time.Second)
			st, shards := runShards(t, prog, 3, b.URL())
			if st.Incomplete != "" {
				t.Fatalf("incomplete: %s", st.Incomplete)
			}
			m := all(st)
			fc := b.FaultCounts()
			if tc.faults.DropEvery == 0 {
				// No fault hook, no counters of its own: one subscriber
				// a message, each delivered once.
				fc = broker.FaultCounts{Published: planned(prog), Deliveries: planned(prog)}
			}
			if want := planned(prog); m.Sent != want || fc.Published != want {
				t.Errorf("sent %d, the broker took %d, want %d", m.Sent, fc.Published, want)
			}
			if m.Expected != fc.Deliveries {
				t.Errorf("expected %d, the broker delivered %d", m.Expected, fc.Deliveries)
			}
			if m.Lost != fc.Dropped || m.Duplicates != fc.Duplicated || (fc.Dropped == 0) != (tc.faults.DropEvery == 0) {
				t.Errorf("lost %d, duplicates %d; the broker dropped %d and duplicated %d", m.Lost, m.Duplicates, fc.Dropped, fc.Duplicated)
			}
			if m.Foreign != 0 || m.Unexpected != 0 {
				t.Errorf("foreign %d, unexpected %d", m.Foreign, m.Unexpected)
			}
			if len(st.Groups) != 2 || st.Groups[0].Clients != 4 || st.Groups[1].Clients != 4 {
				t.Errorf("groups %+v: want 4 clients each", st.Groups)
			}
			if tc.faults.DropEvery == 0 {
				for i, s := range shards {
					if s.DrainQuiet == 0 {
						t.Errorf("shard %d drained to its limit: it never knew it had every delivery", i)
					}
				}
			}
		})
	}
}
