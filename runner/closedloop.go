package runner

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
)

// This file is the closed loop (publish.rate: max, see plans/closedloop.go):
// a publisher that sends its next message as soon as its window allows,
// instead of at intended times from a schedule. There is no timetable, so
// there is nothing to lag behind and nothing left unsent: what it measures
// is the service latency, from the moment a message was actually sent
// (its header carries that moment in place of an intended time), and the
// rate it achieved (send_rate). Accounting stays exact the same way as
// for the open loop: each message sent adds its publisher's expected
// deliveries (a per-publisher figure), so expected = sent × that.

// sentAtUnit is the resolution of the send offset a closed-loop token
// carries (see closedToken): 32 bits of milliseconds cover 49 days.
const sentAtUnit = time.Millisecond

// closedToken is the token of a closed-loop publisher's message: its
// sequence number in the low 32 bits (as for the open loop, so resume and
// settle read it the same way) and its send offset from the start of
// publishing, in sentAtUnit, in the high 32 bits. The open loop gets the
// send time back from its schedule; the closed loop has none, so the token
// carries it, and still nothing is stored per message.
func closedToken(seq uint32, off time.Duration) mqttc.Token {
	return mqttc.Token(seq) | mqttc.Token(uint64(off/sentAtUnit)&math.MaxUint32)<<32
}

// sentAsMax is sentAs for a closed-loop publisher's token: the phase it
// was sent in and its send time (wall-clock ns, to the millisecond: a
// message sent again on a resumed session carries it in its header).
func (r *run) sentAsMax(tok mqttc.Token) (ph phase.Phase, sent int64) {
	off := time.Duration(tok>>32) * sentAtUnit
	return r.prog.PhaseOf(off), r.epochWall + r.pubStart.Load() + int64(off)
}

// ackedWake tells a closed-loop publisher waiting for its window that an
// acknowledgement freed a slot (capacity 1: it never blocks the reader).
func ackedWake(c *client) {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// publishMax runs one client's closed loop from start (ns since the
// epoch) to the end of steady, or until publish.count messages. With QoS
// 1/2 it waits, before taking the send time, until fewer than its window
// (publish.inflight, or less when the broker's Receive Maximum says so)
// are awaiting their acknowledgement, woken by the acknowledgement that
// frees a slot; so the latency starts when the message is sent, not when
// it began to wait. With QoS 0 each message follows the previous write.
// Like publish, it allocates nothing per message.
func (r *run) publishMax(ctx context.Context, c *client, start int64) {
	pc := c.plan
	pub := pc.Publish
	defer func() {
		if ctx.Err() == nil {
			c.quit.Store(int64(c.next) + 1)
		}
	}()
	end := start + int64(r.prog.Warmup+r.prog.Ramp+r.prog.Steady)
	limit := math.MaxUint32 - 1 // the header's sequence is 32 bits
	if n := pub.Schedule.Count; n > 0 {
		limit = min(limit, n)
	}
	w := newPayloadWriter(pub)
	key := plans.PayloadKey{Seed: r.checks.seed, Pub: uint32(pc.Index)}
	rec := sendRecord{group: pc.Group, bytes: int64(pub.Size), expected: c.expected, expectedBy: c.expectedBy, closed: true}
	for k := 0; k < limit; k++ {
		c.next = k
		if !c.ready.Load() && !r.awaitReconnect(ctx, c) {
			return
		}
		mc := c.live.Load()
		for pub.QoS > 0 && mc.Pending() >= mc.Window() {
			select {
			case <-c.wake:
			case <-ctx.Done():
				return
			case <-mc.Done():
				if !r.awaitReconnect(ctx, c) {
					return
				}
				mc = c.live.Load()
			}
		}
		now := r.now()
		if now >= end || ctx.Err() != nil {
			return
		}
		off := time.Duration(now - start)
		ph := r.prog.PhaseOf(off)
		// The same rendering as the open loop's (templates, drawn sizes,
		// the header's place), with the actual send time as the
		// message's intended one.
		key.Seq, key.Intended = uint32(k+1), r.epochWall+now
		buf, props := w.fill(r.pattern, pc, key)
		rec.bytes = int64(len(buf))
		if err := mc.PublishProps(ctx, pub.Topic, pub.QoS, pub.Retain, props, buf, closedToken(uint32(k+1), off)); err != nil {
			if ctx.Err() != nil {
				return // stopped while writing: not sent
			}
			// As in the open loop: this message is not sent, and its
			// deliveries count as lost_unsent; the loop goes on.
			c.next = k + 1
			r.rec.recordUnsent(pc.Index, ph, pc.Group, 1, rec.expected, rec.expectedBy)
			r.fail(pc, fmt.Errorf("publish %s: %w", pc.ID, cleanErr(err)))
			if !c.ready.Load() && !r.awaitReconnect(ctx, c) {
				return
			}
			continue
		}
		rec.intended = now
		rec.phase = ph
		r.rec.recordSend(pc.Index, &rec)
	}
}

// closedLoopEnd returns the context that bounds publishing's phase clock:
// when every publisher is in the closed loop, publishing ends once they
// have all returned (each sent its publish.count, or lost its connection
// for good) instead of at the planned end of steady, since a closed loop
// owes no messages to a timetable; with an open-loop publisher the
// timetable runs its course, so that what falls due counts as unsent.
// publishers is the WaitGroup of the publish goroutines (and the pacer).
func closedLoopEnd(ctx context.Context, pubs []*client, publishers *sync.WaitGroup) (context.Context, context.CancelFunc) {
	if len(pubs) == 0 {
		return ctx, func() {}
	}
	for _, c := range pubs {
		if !c.plan.Publish.Max {
			return ctx, func() {}
		}
	}
	phaseCtx, cancel := context.WithCancel(ctx)
	go func() {
		publishers.Wait()
		cancel()
	}()
	return phaseCtx, cancel
}
