package coord

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var testHello = Hello{N: 2, RunID: "r", PlanSHA256: "plan", AssignSHA256: "assign", Version: "v"}

// serve starts a coordinator for cfg on loopback and returns its address
// and the channel its result comes on.
func serve(t *testing.T, ctx context.Context, cfg Config) (string, <-chan served) {
	t.Helper()
	co, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan served, 1)
	go func() {
		res, err := co.Serve(ctx)
		done <- served{res, err}
	}()
	return co.Addr(), done
}

type served struct {
	res *Result
	err error
}

func shardHello(i int) Hello {
	h := testHello
	h.Shard = i
	return h
}

// TestBarriersSumAndEpochAgree: two shards meet at the epoch and at a
// barrier: they get the same epoch, in the future when it was given, the
// element-wise sums and the latest proposal; their partials are collected.
func TestBarriersSumAndEpochAgree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr, done := serve(t, ctx, Config{Hello: testHello, JoinTimeout: 10 * time.Second, EpochDelay: 100 * time.Millisecond})
	var wg sync.WaitGroup
	epochs := make([]int64, 2)
	sums := make([][]int64, 2)
	ats := make([]time.Duration, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Join(ctx, addr, shardHello(i), nil, 10*time.Second, 0)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			if _, d := s.Clock(); d < 0 || d > 10*time.Millisecond {
				errs[i] = errors.New("clock delay out of range on loopback: " + d.String())
				return
			}
			if epochs[i], err = s.Epoch(ctx); err != nil {
				errs[i] = err
				return
			}
			if now := time.Now().UnixNano(); now < epochs[i] {
				errs[i] = errors.New("Epoch returned before the epoch")
				return
			}
			if sums[i], ats[i], err = s.Barrier(ctx, "b", []int64{int64(i + 1), 10}, time.Duration(i)*time.Second); err != nil {
				errs[i] = err
				return
			}
			errs[i] = s.HandIn([]byte(`{"shard":`+string(rune('0'+i))+`}`), 5*time.Second)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	if epochs[0] != epochs[1] {
		t.Errorf("epochs %v: want one", epochs)
	}
	for i := range 2 {
		// The latest proposal, set ahead by twice the slowest shard's
		// one-way delay (microseconds on loopback).
		if !slices.Equal(sums[i], []int64{3, 20}) || ats[i] < time.Second || ats[i] > time.Second+20*time.Millisecond || ats[i] != ats[0] {
			t.Errorf("shard %d: sums %v at %v, want [3 20] at 1s and a little more, the same for all", i, sums[i], ats[i])
		}
	}
	s := <-done
	if s.err != nil || len(s.res.Lost) != 0 || string(s.res.Parts[1]) != `{"shard":1}` {
		t.Fatalf("result %+v, %v", s.res, s.err)
	}
}

// TestRefusals: a shard of another plan, assignment, run, build or shard
// count is refused, on both sides, with what differs.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Hello)
		want string
	}{
		{"plan", func(h *Hello) { h.PlanSHA256 = "other" }, "another plan"},
		{"broker", func(h *Hello) { h.Broker, h.PlanSHA256 = "mqtt://10.0.0.6:1883", "other" }, "shard 1 connects to broker mqtt://10.0.0.6:1883"},
		{"assignment", func(h *Hello) { h.AssignSHA256 = "other" }, "splits the clients otherwise"},
		{"run id", func(h *Hello) { h.RunID = "x" }, "run id"},
		{"version", func(h *Hello) { h.Version = "w" }, "run one build everywhere"},
		{"count", func(h *Hello) { h.N = 3 }, "a run of 2 shards"},
		{"index", func(h *Hello) { h.Shard = 5; h.N = 2 }, "not one of the run's 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			addr, done := serve(t, ctx, Config{Hello: testHello, JoinTimeout: 5 * time.Second})
			h := shardHello(1)
			tc.edit(&h)
			_, err := Join(ctx, addr, h, nil, 5*time.Second, 0)
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("shard: %v, want a refusal saying %q", err, tc.want)
			}
			s := <-done
			if !errors.As(s.err, &refused) {
				t.Errorf("coordinator: %v, want a refusal", s.err)
			}
		})
	}
}

// TestMissingShard: a shard that never joins ends the run at the join
// timeout, naming it, and the shard that did join is stopped.
func TestMissingShard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, done := serve(t, ctx, Config{Hello: testHello, JoinTimeout: 300 * time.Millisecond})
	s, err := Join(ctx, addr, shardHello(0), nil, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := <-done
	var missing *MissingError
	if !errors.As(r.err, &missing) || !slices.Equal(missing.Shards, []int{1}) || !strings.Contains(r.err.Error(), "shards 1 of 2 never joined") {
		t.Fatalf("%v, want shard 1 missing", r.err)
	}
	select {
	case <-s.Stopped():
	case <-ctx.Done():
		t.Fatal("the shard that joined was never stopped")
	}
}

// TestLateCoordinator: shards that start before the coordinator retry
// until it listens.
func TestLateCoordinator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there yet
	joined := make(chan error, 2)
	for i := range 2 {
		go func() {
			s, err := Join(ctx, addr, shardHello(i), nil, 5*time.Second, 0)
			if err == nil {
				_, err = s.Epoch(ctx)
				if err == nil {
					err = s.HandIn([]byte("{}"), 5*time.Second)
				}
				s.Close()
			}
			joined <- err
		}()
	}
	time.Sleep(300 * time.Millisecond) // the coordinator starts late: that is the test
	co, err := Listen(addr, Config{Hello: testHello, JoinTimeout: 5 * time.Second, EpochDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := co.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-joined; err != nil {
			t.Fatal(err)
		}
	}
	if len(res.Lost) != 0 {
		t.Errorf("lost %v", res.Lost)
	}
}

// TestLostPeers: a shard whose connection drops is reported lost and the
// others' barriers still open; a coordinator that goes away stops its
// shards with ErrLost.
func TestLostPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, done := serve(t, ctx, Config{Hello: testHello, JoinTimeout: 5 * time.Second, EpochDelay: 50 * time.Millisecond})
	s0, err := Join(ctx, addr, shardHello(0), nil, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s0.Close()
	s1, err := Join(ctx, addr, shardHello(1), nil, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	s1.Close() // shard 1 dies
	if _, err := s0.Epoch(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s0.HandIn([]byte("{}"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !slices.Equal(r.res.Lost, []int{1}) || r.res.Parts[1] != nil {
		t.Fatalf("%+v %v: want shard 1 lost", r.res, r.err)
	}
	select {
	case <-s0.Stopped():
	case <-ctx.Done():
		t.Fatal("the coordinator ended, the shard never noticed")
	}
	if !errors.Is(s0.Lost(), ErrLost) {
		t.Errorf("Lost() = %v", s0.Lost())
	}
}

// TestLostCalledAtOnce: Config.Lost hears of a shard as soon as it is
// lost, with why: silent for Idle (a stopped process keeps its
// connection open) or its connection closed; the run goes on, and the
// result lists it.
func TestLostCalledAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leave makes shard 1 go: fall silent, its connection open (its
		// beats stopped, as in a stopped process), or close.
		leave func(s *Shard)
		want  string
	}{
		{"silent", func(s *Shard) { close(s.beatStop) }, "silent for 2.5s (no beat)"},
		{"closed", func(s *Shard) { close(s.beatStop); s.c.c.Close() }, "its connection closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			lost := make(chan string, 2)
			addr, done := serve(t, ctx, Config{Hello: testHello, JoinTimeout: 5 * time.Second, Idle: 2500 * time.Millisecond,
				EpochDelay: 50 * time.Millisecond, Lost: func(i int, why error) { lost <- fmt.Sprintf("%d: %v", i, why) }})
			s0, err := Join(ctx, addr, shardHello(0), nil, 5*time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s0.Close()
			s1, err := Join(ctx, addr, shardHello(1), nil, 5*time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s1.c.c.Close()
			left := time.Now()
			tc.leave(s1)
			var got string
			select {
			case got = <-lost:
			case <-ctx.Done():
				t.Fatal("Lost never called")
			}
			if took := time.Since(left); got != "1: "+tc.want || took > 2500*time.Millisecond+500*time.Millisecond {
				t.Errorf("Lost(%s) %v after, want 1: %s within the idle timeout", got, took, tc.want)
			}
			if _, err := s0.Epoch(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s0.HandIn([]byte("{}"), 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.err != nil || !slices.Equal(r.res.Lost, []int{1}) {
				t.Fatalf("%+v %v: want shard 1 lost", r.res, r.err)
			}
		})
	}
}
