package runner

import (
	"sync"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// Schedule cursors: the runner asks a publisher's schedule for message k's
// intended time once per message in four places: the pacer (when the next
// one falls due), the publish goroutine (when to send), the acknowledgement
// handler (the phase and intended time of the acked message: sentAs) and a
// requester's answer handler (the intended time its correlation data must
// carry). For uniform arrivals and bursts Schedule.At is a closed form
// (about 15 ns); for Poisson arrivals it is random access into the arrival
// tree (about 6 µs), so each of those places keeps a plans.Cursor, which
// reads consecutive messages in O(1) amortised (about 55 ns) and gives the
// same times bit for bit.

// cursors are a Poisson publisher's cursors: allocated only for Poisson
// schedules (nil otherwise, so a plan of other arrivals pays nothing), one
// per reader, each touched by one goroutine at a time (see sharedCursor).
type cursors struct {
	pace    plans.Cursor // the pacer shard's (the publish goroutine keeps its own)
	acks    sharedCursor // the acknowledgement handler's, and resume's
	answers sharedCursor // the answer handler's
}

// newCursors returns the cursors of a Poisson publisher, nil for any other
// client.
func newCursors(pc *plans.Client) *cursors {
	pub := pc.Publish
	if pub == nil || !pub.Schedule.Poisson || pub.Max {
		return nil
	}
	s := &pub.Schedule
	return &cursors{pace: s.Cursor(),
		acks: sharedCursor{cur: s.Cursor()}, answers: sharedCursor{cur: s.Cursor()}}
}

// sharedCursor is a cursor for handlers that normally run on one goroutine
// (a connection's reader) but may overlap for a moment: across a reconnect
// the old connection's last acknowledgements and resume's resends can meet
// the new reader's. Whoever finds it busy reads the schedule by random
// access instead, which gives the same times: the lock is per publisher
// and never waited for.
type sharedCursor struct {
	mu  sync.Mutex
	cur plans.Cursor
}

// at is sch.At(k), through the cursor when it is free. A nil sharedCursor
// (a client without cursors) reads sch directly.
func (c *sharedCursor) at(sch *plans.Schedule, k int) (time.Duration, bool) {
	if c == nil || !c.mu.TryLock() {
		return sch.At(k)
	}
	off, ok := c.cur.At(k)
	c.mu.Unlock()
	return off, ok
}

// ackCursor and answerCursor are c's shared cursors, nil without cursors.
func (c *client) ackCursor() *sharedCursor {
	if c == nil || c.cur == nil {
		return nil
	}
	return &c.cur.acks
}

func (c *client) answerCursor() *sharedCursor {
	if c == nil || c.cur == nil {
		return nil
	}
	return &c.cur.answers
}
