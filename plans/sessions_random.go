package plans

import (
	"math/bits"
	"slices"
	"time"
)

// Random lifetimes (issue 10, churn): `lifetime: {min: 10s, max: 60s}`
// draws each session's length uniformly from [min, max], from a stream
// keyed by the plan's seed and the client's index in the plan, so the
// timetable stays a pure function of the plan: explain prints it, the
// tests derive it, and the runner only follows it.
//
// Client j of a group of n draws L(j, 0), L(j, 1), ... in turn from its
// stream. Its first session is cut short, as with a fixed lifetime, so
// that the group's clients do not all leave together:
//
//	d(j, 0) = (j+1)·(L(j, 0) + away)/n
//	d(j, k) = d(j, k-1) + away + L(j, k)
//
// and, as with every timetable, a client leaves only when it is back
// before publishing ends. With min == max this is the fixed lifetime's
// timetable exactly.
//
// Unlike a fixed period, a sum of draws has no closed form, so the
// timetable is computed once at compile time: every disconnect offset of
// the group in one slice (8 bytes a disconnect, bounded by
// maxRandomDisconnects), and every question about it (Disconnects,
// DisconnectAt, the windows before a time) is an index or a binary search
// in client j's part, allocation-free.

// drawnSessions is the materialised timetable of a group with a random
// lifetime.
type drawnSessions struct {
	// at holds every client's disconnect offsets, client by client, each
	// client's ascending; client j's are at[off[j]:off[j+1]].
	at  []time.Duration
	off []int
	// back, when not nil, parallels at with each window's return
	// (stage clients, stage_clients.go; math.MaxInt64: none); nil means
	// at + Away.
	back []time.Duration
}

// lifetimeStream is the key of the lifetime draws, hashed with the seed
// and the client index (poisson arrivals and payloads use other keys).
const lifetimeStream = 0x6c69666574696d65 // "lifetime"

// newDrawnSessions is the timetable of a group of count clients, the first
// of them client number first in the plan, for publishing that ends at
// end. Drawing stops at maxRandomDisconnects in all (checkChurn refuses a
// plan that could imply more, so it never stops early on a loaded plan).
func newDrawnSessions(c *Churn, count, first int, end time.Duration, seed uint64) *Sessions {
	s := &Sessions{Away: c.Away, End: end, Clients: count, LifetimeMin: c.Lifetime, LifetimeMax: c.LifetimeMax}
	d := &drawnSessions{off: make([]int, count+1)}
	span := float64(c.LifetimeMax - c.Lifetime)
	draw := func(r *splitmix) time.Duration {
		return c.Lifetime + time.Duration(r.uniform()*span)
	}
	for j := 0; j < count; j++ {
		r := splitmix{mixIn(mixIn(seed, lifetimeStream), uint64(first+j))}
		p := satAdd(draw(&r), c.Away)
		hi, lo := bits.Mul64(uint64(j+1), uint64(p))
		q, _ := bits.Div64(hi, lo, uint64(count))
		for t := time.Duration(q); t < end-c.Away && len(d.at) < maxRandomDisconnects; t = satAdd(t, satAdd(c.Away, draw(&r))) {
			d.at = append(d.at, t)
		}
		d.off[j+1] = len(d.at)
	}
	s.drawn = d
	return s
}

// disconnects is client j's disconnect offsets.
func (d *drawnSessions) disconnects(j int) []time.Duration { return d.at[d.off[j]:d.off[j+1]] }

// before is how many of client j's disconnects come before t.
func (d *drawnSessions) before(j int, t time.Duration) int {
	i, _ := slices.BinarySearch(d.disconnects(j), t)
	return i
}

// backsBefore is how many of client j's returns come before t (windowed
// timetables only).
func (d *drawnSessions) backsBefore(j int, t time.Duration) int {
	i, _ := slices.BinarySearch(d.back[d.off[j]:d.off[j+1]], t)
	return i
}
