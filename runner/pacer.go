package runner

import (
	"context"
	"runtime"
	"time"
)

// pacer wakes publishers at their messages' intended times.
//
// Go's timers are only as precise as the runtime's netpoller, which on
// Linux waits in whole milliseconds: measured here, a timer fires ~0.6 ms
// late at the median and more than 1 ms late one time in ten. Every µs of
// that would be charged to the broker, since latency is measured from the
// intended time. The pacer instead sleeps on a precise sleeper (a timerfd
// on Linux, which the netpoller reports the moment it fires: ~0.1 ms
// median) and, when a message falls due, writes it itself or wakes the
// publisher's goroutine through its channel (pacer_send.go says which).
//
// A shard owns a min-heap of (next intended time, publisher) and is the
// only goroutine touching it, so the hot path takes no lock: when an entry
// falls due, the shard writes the publisher's due messages or signals the
// publisher, and moves the entry to the publisher's next intended time
// (the schedule is a pure function of k), independently of how far the
// publisher itself has got. A publisher behind its schedule sends without
// waiting; a stale signal only makes it re-check the clock.
type pacer struct {
	shards []*pacerShard
}

// pacerQuantum is the shortest sleep of the pacer (see pacerShard.run).
const pacerQuantum = 250 * time.Microsecond

type pacerShard struct {
	// due is called for a publisher whose entry fell due: it writes the
	// publisher's due messages or wakes its goroutine (run.paceDue).
	due     func(ctx context.Context, c *client)
	heap    []pacerEntry
	start   int64
	now     func() int64
	sleeper sleeper
}

// pacerEntry is one publisher's next intended send.
type pacerEntry struct {
	due int64 // ns since the run's epoch
	k   int   // message index
	c   *client
}

// sleeper waits for a duration with better precision than time.Timer
// where the platform allows; wake interrupts a sleep from another goroutine.
type sleeper interface {
	sleep(d time.Duration)
	wake()
	close()
}

// newPacer builds the heaps for the given publishers, whose schedules
// start at start (ns since the epoch).
func newPacer(pubs []*client, start int64, now func() int64, due func(context.Context, *client)) (*pacer, error) {
	n := min(max(1, runtime.GOMAXPROCS(0)), 4, max(1, len(pubs)))
	p := &pacer{shards: make([]*pacerShard, n)}
	for i := range p.shards {
		s, err := newSleeper()
		if err != nil {
			for _, sh := range p.shards[:i] {
				sh.sleeper.close()
			}
			return nil, err
		}
		p.shards[i] = &pacerShard{start: start, now: now, sleeper: s, due: due}
	}
	for i, c := range pubs {
		off, ok := c.paceAt(0)
		if !ok {
			continue
		}
		sh := p.shards[i%n]
		sh.heap = append(sh.heap, pacerEntry{due: start + int64(off), c: c})
	}
	for _, sh := range p.shards {
		for i := len(sh.heap)/2 - 1; i >= 0; i-- {
			sh.down(i)
		}
	}
	return p, nil
}

// run drives every shard until each publisher's schedule is exhausted or
// ctx is done.
func (p *pacer) run(ctx context.Context) {
	done := make(chan struct{}, len(p.shards))
	for _, sh := range p.shards {
		go func() {
			sh.run(ctx)
			done <- struct{}{}
		}()
	}
	stop := context.AfterFunc(ctx, func() {
		for _, sh := range p.shards {
			sh.sleeper.wake()
		}
	})
	for range p.shards {
		<-done
	}
	stop()
	for _, sh := range p.shards {
		sh.sleeper.close()
	}
}

func (s *pacerShard) run(ctx context.Context) {
	for len(s.heap) > 0 && ctx.Err() == nil {
		now := s.now()
		for len(s.heap) > 0 && s.heap[0].due <= now {
			e := &s.heap[0]
			s.due(ctx, e.c)
			if off, ok := e.c.paceAt(e.k + 1); ok {
				e.k++
				e.due = s.start + int64(off)
			} else {
				last := len(s.heap) - 1
				s.heap[0] = s.heap[last]
				s.heap = s.heap[:last]
			}
			if len(s.heap) > 0 {
				s.down(0)
			}
		}
		if len(s.heap) == 0 {
			return
		}
		if d := s.heap[0].due - s.now(); d > 0 {
			// Never sleep less than pacerQuantum: at high rates one wake
			// then serves several messages instead of one each. Measured
			// at 10k msg/s against Mosquitto, 250 µs instead of 100 µs
			// cut mqplan's CPU by ~18%; the price is sends up to 250 µs
			// late at such rates (measured as lag, never early), still
			// less than Go timers' 0.6 ms median.
			s.sleeper.sleep(max(time.Duration(d), pacerQuantum))
		}
	}
}

// paceAt is the intended time of the publisher's message k, for the
// pacer: through its cursor (O(1) a message for Poisson arrivals, which
// the pacer asks for in order), or the schedule's closed form.
func (c *client) paceAt(k int) (time.Duration, bool) {
	if c.cur != nil {
		return c.cur.pace.At(k)
	}
	return c.plan.Publish.Schedule.At(k)
}

// down restores the heap property below i.
func (s *pacerShard) down(i int) {
	h := s.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].due < h[l].due {
			m = r
		}
		if h[i].due <= h[m].due {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// timerSleeper is the portable sleeper: a reused time.Timer.
type timerSleeper struct {
	t     *time.Timer
	wakeC chan struct{}
}

func newTimerSleeper() *timerSleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerSleeper{t: t, wakeC: make(chan struct{}, 1)}
}

func (s *timerSleeper) sleep(d time.Duration) {
	s.t.Reset(d)
	select {
	case <-s.t.C:
	case <-s.wakeC:
		s.t.Stop()
	}
}

func (s *timerSleeper) wake() {
	select {
	case s.wakeC <- struct{}{}:
	default:
	}
}

func (s *timerSleeper) close() { s.t.Stop() }
