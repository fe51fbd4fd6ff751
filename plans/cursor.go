package plans

import "time"

// Cursor is a schedule read in order: the runner's way to ask for message
// k's intended time once per message. Schedule.At is random access, which
// for Poisson arrivals costs a walk of up to two blocks of the arrival tree
// (about 7 µs a message); a Cursor keeps the position of the Poisson
// process between calls (poissonCursor), so that asking for k, k+1, k+2, …
// costs O(1) amortised and allocates nothing. It gives exactly what At
// gives, bit for bit, whatever the order of the calls: asking for any other
// k repositions it, at the cost of one At.
//
// For the other arrivals At is already a closed form and a Cursor just
// calls it. A Cursor is a few words, owned by one goroutine (it is not
// safe for concurrent use); the Schedule it reads must outlive it and not
// change.
type Cursor struct {
	s *Schedule
	// For Poisson schedules: pc is positioned at arrival k (its next call
	// returns S(k)); last and lastK cache the previous answer, so that a
	// message asked for twice (its send, then its acknowledgement) costs
	// nothing the second time.
	pc     poissonCursor
	k      int
	lastK  int
	last   time.Duration
	lastOK bool
}

// Cursor returns a cursor over the schedule's messages, positioned at
// message 0. s must stay in place while the cursor is used.
func (s *Schedule) Cursor() Cursor {
	c := Cursor{s: s, lastK: -1}
	if s.Poisson {
		c.pc = s.Arrivals.cursor(0)
	}
	return c
}

// At is s.At(k): the intended offset of message k from the start of
// warmup, false when the schedule has no message k.
func (c *Cursor) At(k int) (time.Duration, bool) {
	s := c.s
	if !s.Poisson || s.Burst > 0 {
		return s.At(k)
	}
	if k == c.lastK {
		return c.last, c.lastOK
	}
	if k < 0 || s.Interval <= 0 || (s.Count > 0 && k >= s.Count) {
		return 0, false
	}
	c.seek(k)
	t := s.delayed(s.inverse(c.pc.next()))
	c.k = k + 1
	c.lastK, c.last, c.lastOK = k, 0, false
	if t < float64(s.End()) {
		c.last, c.lastOK = time.Duration(t), true
	}
	return c.last, c.lastOK
}

// seek positions the Poisson cursor at arrival k: by walking when k is a
// little ahead (less than a block), by the tree otherwise. Either way the
// arrivals are the same numbers (poisson.go: a cursor started anywhere
// computes every arrival by the same operations).
func (c *Cursor) seek(k int) {
	switch {
	case k == c.k:
	case k > c.k && k-c.k < poissonBlock:
		for c.k < k {
			c.pc.next()
			c.k++
		}
	default:
		c.pc = c.s.Arrivals.cursor(uint64(k))
		c.k = k
	}
}
