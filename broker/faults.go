package broker

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mochi-mqtt/server/v2/system"
)

// Faults injects broker-side misbehaviour so that mqplan's own accounting
// (loss, duplicates, latency) can be tested against known truth: a run
// against a broker that drops exactly 1 delivery in 100 must report exactly
// that loss.
//
// A delivery is one PUBLISH from the broker to one subscriber. Deliveries
// are numbered 1, 2, 3... in the order the broker writes them, with one
// counter shared by all subscribers, so the counts are exact and
// deterministic: over D deliveries, floor(D/DropEvery) are dropped. Dropping
// is decided first; a dropped delivery is neither duplicated nor delayed.
// Resends of inflight messages when a session resumes (DUP flag set) are not
// numbered and never faulted.
//
// The zero value injects nothing and installs no hook, so it costs nothing.
type Faults struct {
	// DropEvery drops every N-th delivery (1 in N), 0 = off. The delivery is
	// never written to the subscriber; for QoS 1/2 its inflight entry is
	// removed as if it had been acknowledged, so the broker neither retries
	// it nor counts it against later deliveries.
	DropEvery int
	// DuplicateEvery writes every N-th delivery that is not dropped twice,
	// 0 = off. The subscriber's application sees the same payload twice. A
	// QoS 1/2 copy gets a packet identifier of its own (and its own inflight
	// entry), because an MQTT client treats a repeated QoS 2 identifier
	// without the DUP flag as a retransmission of the message it holds, and
	// the broker could not match two PUBACKs for one identifier.
	// With DropEvery = d and DuplicateEvery = u, floor(D/u) - floor(D/lcm(d,u))
	// deliveries are duplicated.
	DuplicateEvery int
	// Delay holds every delivery that is not dropped (and its copy) for this
	// long before writing it, 0 = off. Each subscriber's deliveries wait in
	// their own FIFO served by its own goroutine, so order is kept, a
	// subscriber's throughput is unchanged (the delay is not added once per
	// message) and other subscribers are not held up.
	Delay time.Duration
}

func (f Faults) enabled() bool {
	return f.DropEvery != 0 || f.DuplicateEvery != 0 || f.Delay != 0
}

// needsUnbufferedWrites reports whether the hook will make writes fail on
// purpose (dropping or deferring a delivery), see start.
func (f Faults) needsUnbufferedWrites() bool {
	return f.DropEvery != 0 || f.Delay != 0
}

func (f Faults) validate() error {
	var errs []error
	if f.DropEvery < 0 {
		errs = append(errs, errors.New("faults: DropEvery must be >= 0"))
	}
	if f.DuplicateEvery < 0 {
		errs = append(errs, errors.New("faults: DuplicateEvery must be >= 0"))
	}
	if f.Delay < 0 {
		errs = append(errs, errors.New("faults: Delay must be >= 0"))
	}
	return errors.Join(errs...)
}

// FaultCounts are the fault hook's own exact counters, for comparing with
// what mqplan measured.
type FaultCounts struct {
	// Published counts PUBLISH packets the broker accepted from clients.
	Published int64
	// Deliveries counts deliveries the broker attempted: PUBLISH packets it
	// went to write to a subscriber, before any fault (copies excluded).
	Deliveries int64
	// Dropped counts deliveries never written (DropEvery).
	Dropped int64
	// Duplicated counts deliveries written twice (DuplicateEvery); the
	// subscriber receives Deliveries - Dropped + Duplicated messages.
	Duplicated int64
	// Delayed counts deliveries held back by Delay (a copy travels with its
	// original and is not counted again).
	Delayed int64
}

// injectedOrigin marks the packets the fault hook writes itself (delayed
// deliveries and copies) so that OnPacketEncode lets them through
// untouched. Packet.Origin is internal to mochi and never encoded.
const injectedOrigin = "\x00mqplan-fault-injected"

// faultHook implements Faults at mochi's OnPacketEncode hook.
//
// OnPacketEncode is the one point every delivery passes through exactly
// once, in the subscriber's own writer goroutine, after mochi assigned the
// packet identifier and stored the QoS 1/2 inflight entry: mochi has no
// per-delivery hook able to veto a delivery earlier (OnACLCheck is shared
// with SUBSCRIBE checks and any allowing hook wins; OnSelectSubscribers runs
// only for shared subscriptions). The hook can rewrite the packet but not
// cancel the write, so a delivery is suppressed by giving it packet type 0,
// which mochi refuses to encode: nothing reaches the socket and
// MessagesSent is not counted. To drop, the hook then deletes the inflight
// entry; to delay, it keeps the entry (the PUBACK will come after the late
// write) and writes the packet later with Client.WritePacket, which mochi
// already calls from several goroutines per client; to duplicate, it writes
// a copy the same way.
type faultHook struct {
	mqtt.HookBase
	f    Faults
	info *system.Info
	stop <-chan struct{}

	seq        atomic.Int64 // deliveries numbered so far
	published  atomic.Int64
	dropped    atomic.Int64
	duplicated atomic.Int64
	delayed    atomic.Int64

	queues sync.Map // *mqtt.Client → *delayQueue, only with Delay

	// held is how long each delayed delivery was really held, from the
	// hook to the end of its write, in µs (only with Delay): the ground
	// truth of the latency the delay added, timer lateness included.
	heldMu sync.Mutex
	held   *hdrhistogram.Histogram
}

func newFaultHook(f Faults, info *system.Info, stop <-chan struct{}) *faultHook {
	h := &faultHook{f: f, info: info, stop: stop}
	if f.Delay > 0 {
		h.held = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	}
	return h
}

// recordHeld records one delayed delivery's real holding time.
func (h *faultHook) recordHeld(d time.Duration) {
	h.heldMu.Lock()
	_ = h.held.RecordValue(d.Microseconds()) // above a minute: not counted
	h.heldMu.Unlock()
}

// heldTimes returns a copy of the holding times recorded so far.
func (h *faultHook) heldTimes() *hdrhistogram.Histogram {
	h.heldMu.Lock()
	defer h.heldMu.Unlock()
	return h.held.Clone()
}

// ID names the hook in mochi's logs.
func (h *faultHook) ID() string { return "mqplan-faults" }

// Provides selects OnPublish (counting), OnPacketEncode (the faults) and,
// with Delay, OnDisconnect (forgetting the client's delay queue).
func (h *faultHook) Provides(b byte) bool {
	switch b {
	case mqtt.OnPublish, mqtt.OnPacketEncode:
		return true
	case mqtt.OnDisconnect:
		return h.f.Delay > 0
	}
	return false
}

// OnPublish counts the PUBLISH packets accepted from clients. It runs
// before the message is routed, so the count is complete by the time the
// last delivery arrives.
func (h *faultHook) OnPublish(_ *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	h.published.Add(1)
	return pk, nil
}

// OnDisconnect forgets the client's delay queue; deliveries still queued
// fail to write and are discarded by its goroutine.
func (h *faultHook) OnDisconnect(cl *mqtt.Client, _ error, _ bool) {
	h.queues.Delete(cl)
}

// OnPacketEncode numbers each delivery and applies the faults to it.
func (h *faultHook) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type != packets.Publish || pk.FixedHeader.Dup || pk.Origin == injectedOrigin {
		return pk
	}
	if strings.HasPrefix(pk.TopicName, "$SYS/") {
		// The broker's own figures to a $SYS monitor (broker.metrics sys)
		// are not the plan's traffic: faulting them would make the
		// monitor read a mix of updates, and they are not numbered, so
		// the faults hit the same deliveries with or without a monitor.
		return pk
	}
	n := h.seq.Add(1)

	if h.f.DropEvery > 0 && n%int64(h.f.DropEvery) == 0 {
		if pk.FixedHeader.Qos > 0 && cl.State.Inflight.Delete(pk.PacketID) {
			// Roll back as mochi does when its outbound queue is full.
			atomic.AddInt64(&h.info.Inflight, -1)
			cl.State.Inflight.IncreaseSendQuota()
		}
		h.dropped.Add(1)
		return suppress(pk)
	}

	var dup *packets.Packet
	if h.f.DuplicateEvery > 0 && n%int64(h.f.DuplicateEvery) == 0 {
		dup = h.copyOf(cl, pk)
	}

	if h.f.Delay > 0 {
		now := time.Now()
		orig := pk
		orig.Origin = injectedOrigin
		h.delayQueueFor(cl).push(h, cl, now, now.Add(h.f.Delay), orig, dup)
		h.delayed.Add(1)
		return suppress(pk)
	}

	if dup != nil {
		// Written before the original, from inside the original's write but
		// outside mochi's client lock, so the two cannot interleave.
		_ = cl.WritePacket(*dup)
	}
	return pk
}

// copyOf prepares the second copy of a delivery, or returns nil if no
// packet identifier is free for it (the delivery is then not duplicated).
func (h *faultHook) copyOf(cl *mqtt.Client, pk packets.Packet) *packets.Packet {
	d := pk
	d.Origin = injectedOrigin
	if pk.FixedHeader.Qos > 0 {
		id, err := cl.NextPacketID()
		if err != nil {
			return nil
		}
		d.PacketID = uint16(id)
		if cl.State.Inflight.Set(d) {
			atomic.AddInt64(&h.info.Inflight, 1)
		}
	}
	h.duplicated.Add(1)
	return &d
}

// suppress turns a packet into one mochi will not encode or send.
func suppress(pk packets.Packet) packets.Packet {
	pk.FixedHeader.Type = packets.Reserved
	return pk
}

func (h *faultHook) counts() FaultCounts {
	return FaultCounts{
		Published:  h.published.Load(),
		Deliveries: h.seq.Load(),
		Dropped:    h.dropped.Load(),
		Duplicated: h.duplicated.Load(),
		Delayed:    h.delayed.Load(),
	}
}

func (h *faultHook) delayQueueFor(cl *mqtt.Client) *delayQueue {
	if q, ok := h.queues.Load(cl); ok {
		return q.(*delayQueue)
	}
	q, _ := h.queues.LoadOrStore(cl, new(delayQueue))
	return q.(*delayQueue)
}

// delayQueue holds one client's delayed deliveries in write order. Every
// entry is due Delay after it was queued, so FIFO order is also due order
// and one timer serves the whole queue. Its goroutine runs only while the
// queue is non-empty.
type delayQueue struct {
	mu      sync.Mutex
	items   []delayedPacket
	running bool
}

type delayedPacket struct {
	queued, due time.Time
	pk          packets.Packet
	copy        bool // a DuplicateEvery copy: its holding time is not recorded
}

func (q *delayQueue) push(h *faultHook, cl *mqtt.Client, queued, due time.Time, pk packets.Packet, dup *packets.Packet) {
	q.mu.Lock()
	q.items = append(q.items, delayedPacket{queued: queued, due: due, pk: pk})
	if dup != nil {
		q.items = append(q.items, delayedPacket{queued: queued, due: due, pk: *dup, copy: true})
	}
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.drain(h, cl)
	}
}

// drain writes the queued deliveries as they fall due, and returns when the
// queue is empty or the broker is closing.
func (q *delayQueue) drain(h *faultHook, cl *mqtt.Client) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.items = nil
			q.running = false
			q.mu.Unlock()
			return
		}
		it := q.items[0]
		q.items[0] = delayedPacket{}
		q.items = q.items[1:]
		q.mu.Unlock()

		if wait := time.Until(it.due); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-h.stop:
				q.mu.Lock()
				q.items = nil
				q.running = false
				q.mu.Unlock()
				return
			}
		}
		// Fails harmlessly if the client has gone; mochi clears its
		// inflight entries itself.
		if cl.WritePacket(it.pk) == nil && !it.copy {
			h.recordHeld(time.Since(it.queued))
		}
	}
}
