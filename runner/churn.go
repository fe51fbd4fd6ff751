package runner

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// Clients over time (plans/sessions.go): a client of a group with lifetime
// or churn ends its session at the planned moments with a normal
// DISCONNECT and starts a new one, same client id, `away` later. A
// publisher does it from its own publish goroutine, between two messages
// (see run.publish), so that no message of its schedule races its
// disconnect; any other client has a goroutine of its own (runChurn). Both
// run while publishing goes on. Every planned return of lifetime and churn
// is before publishing ends, so every client is connected for the drain;
// stage clients may leave a publisher (never a subscriber, see
// plans/stage_clients.go) away to the end, and it is then not connected
// again.

// leave ends c's session as planned: the acknowledgements of what it
// received go out before DISCONNECT (mqttc.Conn.Leave), so a kept session
// is sent again only what it never handed over. A client whose connection
// was already lost is left as it is: its loss is counted as such.
//
// A clean subscriber first sends its fence and waits for it, and closes
// its session window once its reader stopped (clean_run.go).
func (r *run) leave(c *client) {
	fenced := c.clean != nil && c.ready.Load() && r.cleanFence(c)
	if !c.ready.CompareAndSwap(true, false) {
		if c.clean != nil {
			r.cleanClose(c, false)
		}
		return
	}
	r.connected.Add(-1)
	r.groupConns[c.plan.Group].connected.Add(-1)
	mc := c.live.Load()
	mc.Leave(r.timeout)
	if c.clean != nil {
		// Leave falls back to Disconnect when the reader does not stop
		// in time: the window closes once it has (bounded).
		select {
		case <-mc.ReaderDone():
		case <-time.After(r.timeout):
		}
		r.cleanClose(c, fenced)
	}
	r.rec.recordEvent(c.plan.Index, r.current(), c.plan.Group, evChurnDisconnect, 0)
}

// comeBack starts c's next session (its CONNECT counted in connect.*, as
// any). A session the broker did not keep is subscribed again, and the
// report says so: what was published while the client was away is then
// lost, as far as the broker is concerned. A client that cannot connect is
// down (clients.lost unless a later planned return succeeds).
func (r *run) comeBack(ctx context.Context, c *client) bool {
	if c.clean != nil {
		if !r.cleanReturn(ctx, c) {
			r.down1(c)
			return false
		}
		r.rec.recordEvent(c.plan.Index, r.current(), c.plan.Group, evChurnReconnect, 0)
		return true
	}
	if !r.dial(ctx, c) {
		r.down1(c)
		return false
	}
	mc := c.live.Load()
	r.rec.recordEvent(c.plan.Index, r.current(), c.plan.Group, evChurnReconnect, 0)
	if len(c.plan.Subscriptions) > 0 && !mc.SessionPresent() && mc.Version() != mqttc.Version31 {
		r.note(fmt.Sprintf("group %s: the broker did not keep a churning client's session (CONNACK session present = 0): it was subscribed again, and what was published while it was away is lost", r.prog.Groups[c.plan.Group].Name))
		r.subscribe(ctx, c)
	}
	return true
}

// down1 counts c down after a planned return failed (clients.lost unless
// a later one succeeds).
func (r *run) down1(c *client) {
	if !c.lost.Swap(true) {
		r.down.Add(1)
		r.groupConns[c.plan.Group].down.Add(1)
		c.lostPhase.Store(uint32(r.current()))
	}
}

// churnCycle is client c's k-th planned leave and return, offsets from
// publishing's start (ns since the epoch). It waits for the leave on ctx
// (publishing), then for the return on the run's context: a client that
// left comes back whatever happens to publishing meanwhile, for the drain.
// A publisher first waits (at most the connect timeout) for the
// acknowledgements of what it sent, as a device would before going
// offline. It reports false when the cycle could not complete.
func (r *run) churnCycle(ctx context.Context, c *client, timer *time.Timer, start int64, s *plans.Sessions, j, k int) bool {
	d := s.DisconnectAt(j, k)
	if !r.sleepUntil(ctx, timer, time.Duration(start)+d) {
		return false
	}
	if c.plan.Publish != nil && c.plan.Publish.QoS > 0 {
		r.awaitAcks(ctx, c)
	}
	r.leave(c)
	back := s.BackAt(j, k)
	if back == math.MaxInt64 {
		return true // stage clients: it stays away to the end
	}
	if !r.sleepUntil(r.ctx, timer, time.Duration(start)+back) {
		return false
	}
	return r.comeBack(r.ctx, c)
}

// awaitAcks waits until c's connection has no publish awaiting its
// acknowledgement, at most the connect timeout; what is still in flight
// then is left to the session (sent again on the next connection when the
// broker kept it, else lost unacknowledged).
func (r *run) awaitAcks(ctx context.Context, c *client) {
	mc := c.live.Load()
	if mc == nil || !c.ready.Load() || mc.Pending() == 0 {
		return
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := r.at() + r.timeout
	for mc.Pending() > 0 && r.at() < deadline {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		case <-mc.Done():
			return
		}
	}
}

// runChurn follows the timetable of a client that does not publish: every
// planned leave and return while publishing goes on. A return that fails
// is tried again at the next planned one.
func (r *run) runChurn(ctx context.Context, c *client, start int64) {
	s, j := r.prog.ChurnOf(c.plan)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := 0; k < s.Disconnects(j); k++ {
		if !r.churnCycle(ctx, c, timer, start, s, j, k) && ctx.Err() != nil {
			return
		}
	}
}

// churnResends explains, for a cross-check of the broker's sent count, the
// one way churn makes it larger than what the clients received: what the
// broker wrote to a subscriber as it left, and the subscriber never read,
// the broker sends again on the kept session, and counts twice.
//
// A clean subscriber (clean_run.go) may leave unread what the broker wrote
// to it after its fence: gone with the session, counted by the broker once
// and by no client.
func churnResends(prog *plans.Program) string {
	why := ""
	for gi, gp := range prog.Groups {
		switch {
		case gp.Churn == nil || !gp.Subscribes:
		case prog.Plan.Groups[gi].CleanStart:
			return " (with churn: what the broker wrote to a subscriber as it left, unread, it sends again on a kept session and counts twice, and a clean session drops)"
		default:
			why = " (with churn: what the broker wrote to a subscriber as it left, unread, it sends again on the kept session and counts twice)"
		}
	}
	return why
}
