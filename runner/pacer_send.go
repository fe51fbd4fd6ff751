package runner

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// This file is the pacer's write path: for the publishers that allow it,
// the pacer shard writes a message that falls due itself, on its own
// goroutine, instead of waking the publisher's goroutine to write it.
//
// Why: at a few messages per publisher and tick (fan-in: 500 publishers),
// waking one goroutine per message cost a wake-up, a context switch and,
// with one P, a P hand-off whenever a write stayed in the kernel longer
// than sysmon's tick while the woken publishers were runnable (bench/README.md,
// "Where the CPU goes"). Written by the pacer, a message costs its write and
// nothing else.
//
// Who writes is decided per publisher by one atomic owner word
// (pubState.owner), so that the publisher's state (its position c.next,
// payload writer, cursor and send record) is only ever touched by one
// goroutine at a time: the publisher goroutine runs the publisher until
// its next message is not yet due and its connection is up, then gives it
// to the pacer and waits; the pacer writes each message as it falls due
// and gives the publisher back (owner stored, then a wake) for everything
// it does not do itself, which is whatever could make it wait or needs
// the publisher's own handling:
//
//   - the in-flight window is full (QoS 1/2): the publisher goroutine waits
//     for a slot and sends late, its lag measured as before;
//   - the connection is down (or reconnecting): the goroutine waits for the
//     reconnect, or gives up, as before;
//   - a write failed: the message is counted unsent and the error recorded
//     here, exactly as the goroutine does, then the goroutine takes over;
//   - the schedule is over, or publishing stops: the goroutine returns.
//
// What it costs, and why the pacer never waits in the kernel: a write the
// kernel cannot take (a broker that stopped reading one client, its socket
// send buffer full: a broker's per-client throttling or overload
// protection) must not hold the pacer shard, or every other publisher of
// the shard would send late, and its latency (from the intended time)
// would be charged to the broker. So the pacer writes with
// mqttc.TryPublishProps, whose write never waits on a plain TCP
// connection: a packet the socket takes only in part (or not at all) is
// still sent (committed to the stream, counted sent as the goroutine path
// counts it), its tail is kept by the connection, and the pacer gives the
// publisher back to its goroutine (sendStalled), which writes the tail
// (Conn.Flush) before anything else, blocking there alone as on the old
// path, under the same end-of-publishing release (releaseWriters'
// deadline). The other publishers of the shard go on on time. A tail cut
// by that deadline is a message sent and never received (the broker
// stopped reading it), where a write cut on the goroutine path counts
// unsent; a tail still pending when publishing stops goes out with the
// connection's next write (the end-of-publishing probe, or Disconnect).
//
// TLS and WebSocket connections have no such write (their layers keep
// state across writes; a write there may block): the pacer does not write
// them at all, their publishers stay on the goroutine path (pacerWrites).
//
// Which publishers: open-loop publishers of groups without churn (or stage
// clients, whose away windows and disconnects the goroutine follows) that
// send no requests (request/response state is the goroutine's). The
// others keep the old path, woken by the pacer (pacerWrites says which).
//
// The hand-over has one race, closed by a third state: the goroutine
// checks that its next message is not due, then hands the publisher over;
// if the message fell due in between, and the pacer saw it still owned by
// the goroutine (and only signalled it), nobody would write it until the
// next due entry. So the goroutine looks again after handing over, and
// takes the publisher back (owner pacer -> goroutine) when its message is
// due by then; the pacer marks the publisher ownerBusy while it writes, so
// that the two never both hold it.

// Owners of a publisher (pubState.owner).
const (
	ownerGoroutine int32 = iota // the publisher's goroutine runs it
	ownerPacer                  // the pacer writes its messages as they fall due
	ownerBusy                   // the pacer is writing them now
)

// pubState is what sending one open-loop publisher's messages takes,
// allocated once per publisher and reused for every message; it is
// touched only by the goroutine that owns the publisher (owner).
type pubState struct {
	owner atomic.Int32
	w     *payloadWriter
	key   plans.PayloadKey
	rec   sendRecord
	// cur reads the schedule in order (O(1) a message for Poisson
	// arrivals, see cursors.go).
	cur plans.Cursor
	// pacer: the pacer may write this publisher's messages (pacerWrites).
	pacer bool
	// flush: the pacer's last write stalled (sendStalled): the goroutine
	// writes the connection's pending tail before anything else.
	flush bool
}

// newPubState is the send state of publisher c.
func (r *run) newPubState(c *client) *pubState {
	pc := c.plan
	pub := pc.Publish
	ps := &pubState{
		w:     newPayloadWriter(pub),
		key:   plans.PayloadKey{Seed: r.checks.seed, Pub: uint32(pc.Index)},
		rec:   sendRecord{group: pc.Group, bytes: int64(pub.Size), expected: c.expected, expectedBy: c.expectedBy},
		cur:   pub.Schedule.Cursor(),
		pacer: r.pacerWrites(c),
	}
	return ps
}

// pacerWrites reports whether the pacer may write the messages of
// publisher c itself (see the top of this file): only on a connection
// whose writes need not wait (plain TCP; a reconnect dials the same
// broker URL, so the same transport).
func (r *run) pacerWrites(c *client) bool {
	pc := c.plan
	if pc.Publish == nil || pc.Publish.Max || pc.Publish.ResponseTopic != "" {
		return false
	}
	if mc := c.live.Load(); mc == nil || !mc.TryWrites() {
		return false
	}
	churn, _ := r.prog.ChurnOf(pc)
	return churn == nil
}

// sendOutcome is what became of one attempt to send a message.
type sendOutcome int

const (
	sendDone    sendOutcome = iota // written (and recorded)
	sendFull                       // not written: the window is full (try only)
	sendFailed                     // not written: counted unsent, error recorded
	sendStopped                    // not written: publishing stopped
	sendStalled                    // sent (and recorded), its tail pending (try only): Flush it
)

// send writes message k of publisher c (its intended offset off) and
// records it. try (the pacer) never waits for an in-flight slot: a full
// window is sendFull with nothing done; nor, on a plain TCP connection,
// for the socket: a packet it took only in part is sendStalled (sent, its
// tail pending). It does not allocate.
func (r *run) send(ctx context.Context, c *client, ps *pubState, k int, off time.Duration, try bool) sendOutcome {
	pc := c.plan
	pub := pc.Publish
	intended := r.pubStart.Load() + int64(off)
	rec := &ps.rec
	// Lag is taken when the generator is ready to send: how late its
	// schedule runs. What the connection then spends sending is part of the
	// measured latency, which starts at the intended time anyway.
	rec.lag = time.Duration(r.now() - intended)
	rec.intended = intended
	ph := r.prog.PhaseOf(off)
	ps.key.Seq, ps.key.Intended = uint32(k+1), r.epochWall+intended
	buf, props := ps.w.fill(r.pattern, pc, ps.key)
	rec.bytes = int64(len(buf))
	// A clean subscriber reading this publisher learns of a write before
	// it begins (clean_run.go).
	cp := c.cleanPub
	var wasWritten uint32
	if cp != nil {
		wasWritten = cp.written.Swap(uint32(k + 1))
	}
	// The token is the message's sequence number: sentAs maps it back.
	var err error
	stalled := false
	switch {
	case pub.ResponseTopic != "":
		err = c.publishRequest(ctx, buf, k)
	case try:
		err = c.live.Load().TryPublishProps(pub.Topic, pub.QoS, pub.Retain, props, buf, mqttc.Token(k+1))
		if errors.Is(err, mqttc.ErrWindowFull) {
			if cp != nil {
				cp.written.Store(wasWritten) // no write began: the goroutine begins it
			}
			return sendFull
		}
		if err == mqttc.ErrStalled {
			stalled, err = true, nil // sent: its tail waits for the goroutine
		}
	default:
		err = c.live.Load().PublishProps(ctx, pub.Topic, pub.QoS, pub.Retain, props, buf, mqttc.Token(k+1))
	}
	if err != nil {
		if cp != nil {
			cp.skip(uint32(k), uint32(k+1))
		}
		if ctx.Err() != nil {
			return sendStopped // stopped while waiting or writing: not sent
		}
		// This message is not sent; the schedule goes on.
		c.next = k + 1
		r.rec.recordUnsent(pc.Index, ph, pc.Group, 1, rec.expected, rec.expectedBy)
		r.rec.recordStageUnsent(pc.Index, r.prog.StageOf(off), 1, rec.expected)
		r.fail(pc, fmt.Errorf("publish %s: %w", pc.ID, cleanErr(err)))
		return sendFailed
	}
	rec.phase = ph
	rec.inStage = r.prog.StageOf(off) + 1
	r.rec.recordSend(pc.Index, rec)
	if pub.ResponseTopic != "" {
		r.rec.recordRequest(pc.Index, ph, pc.Group, pub.ExpectedResponses)
	}
	if stalled {
		return sendStalled
	}
	return sendDone
}

// paceDue is the pacer's turn at publisher c, whose entry fell due:
// when the pacer holds c, it writes c's due messages (paceSend); otherwise
// it signals c's goroutine, as for every publisher on the old path.
func (r *run) paceDue(ctx context.Context, c *client) {
	if ps := c.ps; ps != nil && ps.owner.CompareAndSwap(ownerPacer, ownerBusy) {
		r.paceSend(ctx, c)
		return
	}
	select {
	case c.wake <- struct{}{}:
	default: // a signal is already pending: the publisher will re-check
	}
}

// paceSend writes every message of publisher c's that is due by now, from
// c.next on, and gives the publisher back to its goroutine for whatever it
// cannot do itself. It is called only while c's owner is ownerBusy.
func (r *run) paceSend(ctx context.Context, c *client) {
	ps := c.ps
	for {
		k := c.next
		off, ok := ps.cur.At(k)
		if !ok || ctx.Err() != nil || !c.ready.Load() {
			r.giveBack(c)
			return
		}
		if r.pubStart.Load()+int64(off) > r.now() {
			ps.owner.Store(ownerPacer) // not due yet: a later entry is
			return
		}
		switch r.send(ctx, c, ps, k, off, true) {
		case sendDone:
			c.next = k + 1
		case sendStalled:
			// Sent, but the socket is full: the goroutine writes the
			// tail, waiting alone, and the shard goes on.
			c.next = k + 1
			ps.flush = true
			r.giveBack(c)
			return
		default:
			r.giveBack(c)
			return
		}
	}
}

// giveBack hands publisher c back to its goroutine and wakes it.
func (r *run) giveBack(c *client) {
	c.ps.owner.Store(ownerGoroutine)
	select {
	case c.wake <- struct{}{}:
	default: // a signal is already pending: it wakes the goroutine as well
	}
}

// awaitGiveBack hands publisher c, whose next message is intended at
// intended (ns since the epoch), to the pacer and waits until the pacer
// gives it back; false when publishing stopped first (the pacer may then
// still hold it until its shard returns).
func (r *run) awaitGiveBack(ctx context.Context, c *client, intended int64) bool {
	ps := c.ps
	ps.owner.Store(ownerPacer)
	if r.now() >= intended && ps.owner.CompareAndSwap(ownerPacer, ownerGoroutine) {
		return true // due while handing over: the goroutine sends it
	}
	for ps.owner.Load() != ownerGoroutine {
		select {
		case <-c.wake: // a stale signal, or the give-back
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// pacerHeld reports whether the pacer holds publisher c (pacer_send.go).
func (c *client) pacerHeld() bool {
	return c.ps != nil && c.ps.owner.Load() != ownerGoroutine
}
