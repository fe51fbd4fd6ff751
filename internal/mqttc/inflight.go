package mqttc

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// This file is the in-flight window (the QoS 1/2 publishes awaiting their
// acknowledgement, by packet id) and session resume (moving them to the
// next connection of the same client when the broker kept its session).

// Token is the caller's name for one QoS 1/2 publish, carried opaquely
// from Publish to its Ack, and through Adopt, Token and TakeUnacked. The
// caller keeps its own table from tokens to what it needs (the runner
// gives a message's sequence number, and its publisher's schedule gives
// back the message's intended time and phase), so that the in-flight
// record stays a fixed size and the connection knows nothing of the
// caller's bookkeeping.
type Token uint64

// maxInflight caps the QoS 1/2 publishes a client keeps in flight, below
// the broker's Receive Maximum when that is larger: enough to pipeline on
// any link, and small enough that a stalled broker shows up as schedule lag
// instead of unbounded memory.
const maxInflight = 256

// subscribeID is the packet id of SUBSCRIBE; publishes use the ids after
// it, so that a client subscribing again after a reconnect never reuses
// the id of one of its publishes still in flight.
const subscribeID = 1

// inflight is one QoS 1/2 PUBLISH awaiting its PUBACK/PUBCOMP.
type inflight struct {
	token Token
	sent  int64 // when it was sent, on the connection's clock
	qos   byte
	used  bool
	// released: the PUBREC of this QoS 2 message came in, so a resumed
	// session sends PUBREL for it, not the PUBLISH.
	released bool
}

// initWindow sizes the in-flight window. The slots are allocated only
// when the first QoS 1/2 message is published, so that subscribers and
// idle clients do not pay for them.
func (c *Conn) initWindow(n int) {
	c.window = make(chan struct{}, n)
}

// allocWindow allocates the slots, indexed by packet id, and the free ids
// (idMu held).
func (c *Conn) allocWindow() {
	n := cap(c.window)
	c.inflight = make([]inflight, n+subscribeID+1)
	c.freeIDs = make([]uint16, 0, n)
	for id := n + subscribeID; id > subscribeID; id-- {
		c.freeIDs = append(c.freeIDs, uint16(id))
	}
}

// take waits for a free slot (while the window is full, which the caller
// sees as schedule lag) and records a publish of token at qos in it, under
// the packet id it returns. It does not allocate.
func (c *Conn) take(ctx context.Context, token Token, qos byte) (uint16, error) {
	select {
	case c.window <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-c.done:
		return 0, ErrClosed
	}
	return c.record(token, qos), nil
}

// tryTake is take for a caller that must not wait: false, with nothing
// taken, when the window is full.
func (c *Conn) tryTake(token Token, qos byte) (uint16, bool) {
	select {
	case c.window <- struct{}{}:
	default:
		return 0, false
	}
	return c.record(token, qos), true
}

// record records a publish of token at qos in the slot just taken from
// the window, under the packet id it returns.
func (c *Conn) record(token Token, qos byte) uint16 {
	c.idMu.Lock()
	if c.inflight == nil {
		c.allocWindow()
	}
	id := c.freeIDs[len(c.freeIDs)-1]
	c.freeIDs = c.freeIDs[:len(c.freeIDs)-1]
	c.inflight[id] = inflight{token: token, qos: qos, used: true, sent: c.now()}
	c.idMu.Unlock()
	c.pending.Add(1)
	return id
}

// complete ends a QoS 1/2 publish: its latency is reported and its slot
// and packet id are freed.
func (c *Conn) complete(id uint16, reason ReasonCode, ackQoS byte) {
	c.idMu.Lock()
	if int(id) >= len(c.inflight) || !c.inflight[id].used {
		c.idMu.Unlock()
		return // not ours (or already completed): ignore, as MQTT allows
	}
	m := c.inflight[id]
	c.inflight[id] = inflight{}
	c.freeIDs = append(c.freeIDs, id)
	c.idMu.Unlock()
	c.pending.Add(-1)
	<-c.window
	if c.h.Acked != nil {
		c.h.Acked(Ack{Token: m.token, QoS: m.qos, AckQoS: ackQoS, Reason: reason, Latency: time.Duration(c.now() - m.sent)})
	}
}

// markReleased notes that the PUBREC of the QoS 2 publish under id came in.
func (c *Conn) markReleased(id uint16) {
	c.idMu.Lock()
	if int(id) < len(c.inflight) && c.inflight[id].used {
		c.inflight[id].released = true
	}
	c.idMu.Unlock()
}

// release frees a publish's slot and packet id without reporting an ack.
func (c *Conn) release(id uint16) {
	c.idMu.Lock()
	if int(id) >= len(c.inflight) || !c.inflight[id].used {
		c.idMu.Unlock()
		return
	}
	c.inflight[id] = inflight{}
	c.freeIDs = append(c.freeIDs, id)
	c.idMu.Unlock()
	c.pending.Add(-1)
	<-c.window
}

// Adopt takes over the QoS 1/2 publishes that old, a connection of the
// same client that dropped, left unacknowledged, when the broker resumed
// the session: MQTT has the client send them again under the same packet
// ids. It returns their ids in the order they were first sent; the
// caller then calls Resend for each before publishing anything new.
// Entries that do not fit the new window (the broker lowered its Receive
// Maximum) are dropped, and counted in the second result.
//
// Call it once old's reader has returned (see ReaderDone) and before c
// publishes.
func (c *Conn) Adopt(old *Conn) (ids []uint16, dropped int) {
	type entry struct {
		id uint16
		m  inflight
	}
	var moved []entry
	old.idMu.Lock()
	for id := range old.inflight {
		if m := old.inflight[id]; m.used {
			moved = append(moved, entry{uint16(id), m})
			old.inflight[id] = inflight{} // a late ack on old is ignored
		}
	}
	old.idMu.Unlock()
	slices.SortFunc(moved, func(a, b entry) int { return cmp.Compare(a.m.sent, b.m.sent) })
	c.idMu.Lock()
	defer c.idMu.Unlock()
	if c.inflight == nil {
		c.allocWindow()
	}
	for _, e := range moved {
		if int(e.id) >= len(c.inflight) {
			dropped++
			continue
		}
		select {
		case c.window <- struct{}{}:
		default:
			dropped++
			continue
		}
		if j := slices.Index(c.freeIDs, e.id); j >= 0 {
			c.freeIDs = slices.Delete(c.freeIDs, j, j+1)
		}
		c.inflight[e.id] = e.m
		c.pending.Add(1)
		ids = append(ids, e.id)
	}
	return ids, dropped
}

// Token returns the token of the adopted publish under id (see Adopt), for
// the caller to rebuild its payload.
func (c *Conn) Token(id uint16) Token {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	return c.inflight[id].token
}

// Resend sends an adopted publish again: its PUBLISH with the DUP flag,
// or its PUBREL when the broker had already sent PUBREC (QoS 2). payload
// is rebuilt by the caller from the publish's token.
func (c *Conn) Resend(id uint16, topic string, retain bool, payload []byte) error {
	return c.ResendProps(id, topic, retain, nil, payload)
}

// ResendProps is Resend with the message's MQTT 5 properties, as
// PublishProps sent them.
func (c *Conn) ResendProps(id uint16, topic string, retain bool, props, payload []byte) error {
	c.idMu.Lock()
	m := c.inflight[id]
	c.idMu.Unlock()
	if m.released {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if c.werr != nil {
			return c.werr
		}
		var rel [4]byte
		return c.writeLocked(appendAck(rel[:0], TypePubrel, id))
	}
	return c.writePublish(topic, m.qos, retain, true, id, props, payload)
}

// TakeUnacked removes and appends to into the tokens of the QoS 1/2
// publishes still awaiting their PUBACK or PUBREC (a QoS 2 message whose
// PUBREC came in is the broker's responsibility and is left out). A late
// ack on the connection is then ignored.
func (c *Conn) TakeUnacked(into []Token) []Token {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	for id := range c.inflight {
		if m := c.inflight[id]; m.used && !m.released {
			into = append(into, m.token)
			c.inflight[id] = inflight{}
		}
	}
	return into
}

// Pending is the number of QoS 1/2 publishes awaiting their
// acknowledgement.
func (c *Conn) Pending() int { return int(c.pending.Load()) }

// Window is the most QoS 1/2 publishes the connection keeps in flight:
// 256, the broker's Receive Maximum or Options.Inflight, whichever is least.
func (c *Conn) Window() int { return cap(c.window) }
