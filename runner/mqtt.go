package runner

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/packets"
)

// This file is mqplan's MQTT 5 client connection. The rare packets
// (CONNECT, CONNACK, SUBSCRIBE, SUBACK, DISCONNECT) are encoded and decoded
// with eclipse/paho.golang's packets package; the packets of the hot path
// (PUBLISH and its acknowledgements, pings) are handled here, in place,
// because paho.golang's client could not meet mqplan's budgets. Measured
// against Mosquitto here, paho's Client cost ~25 KiB of RSS per idle
// connection (3 goroutines, channels sized by ReceiveMaximum) against a
// budget of 16 KiB, and per message it allocates several objects, starts a
// goroutine for every QoS 1/2 publish and hands every received message
// from its reader goroutine to a router goroutine, which made the
// generator use more CPU than the broker it was testing. This connection
// has one goroutine (its reader), allocates nothing per message, and
// acknowledges deliveries from the reader directly.

// MQTT control packet types (the high nibble of the first byte).
const (
	pktConnect    = 1
	pktConnack    = 2
	pktPublish    = 3
	pktPuback     = 4
	pktPubrec     = 5
	pktPubrel     = 6
	pktPubcomp    = 7
	pktSubscribe  = 8
	pktSuback     = 9
	pktPingreq    = 12
	pktPingresp   = 13
	pktDisconnect = 14
	pktAuth       = 15
)

// maxInflight caps the QoS 1/2 publishes a client keeps in flight, below
// the broker's Receive Maximum when that is larger: enough to pipeline on
// any link, and small enough that a stalled broker shows up as schedule lag
// instead of unbounded memory.
const maxInflight = 256

// maxPacketSize is the largest packet mqplan accepts from a broker.
const maxPacketSize = 256 << 20

// errConnClosed is returned by operations on a closed connection.
var errConnClosed = errors.New("connection closed")

// inflightMsg is one QoS 1/2 PUBLISH awaiting its PUBACK/PUBCOMP.
type inflightMsg struct {
	sent  int64 // ns since the run's epoch
	phase phase.Phase
	qos   byte
	used  bool
	// seq and intended are the message's header fields, so that it can
	// be sent again, byte for byte, when a kept session resumes.
	seq      uint32
	intended int64
	// released: the PUBREC of this QoS 2 message came in, so a resumed
	// session sends PUBREL for it, not the PUBLISH.
	released bool
}

// connectOptions are what one CONNECT says.
type connectOptions struct {
	clientID      string
	username      string
	password      []byte
	keepalive     time.Duration
	cleanStart    bool
	sessionExpiry time.Duration
	will          *packets.Connect // only the Will* fields are used
	timeout       time.Duration
	sourceAddr    string
	// version is the MQTT protocol level: 3 (3.1), 4 (3.1.1) or 5.
	version byte
}

// connHandlers are the callbacks of a connection. They run on its reader
// goroutine, one at a time, and must not block.
type connHandlers struct {
	// publish receives the payload of each delivery and its retain flag;
	// the slice is only valid during the call.
	publish func(payload []byte, retained bool)
	// acked reports the end of a QoS 1/2 publish; reason is the ack's
	// reason code (0x80 and above: the broker refused the message) and
	// ackQoS the QoS its packet type belongs to (PUBACK 1; PUBREC and
	// PUBCOMP 2), which tells a broker that downgraded a QoS 2 publish.
	acked func(m inflightMsg, latency time.Duration, reason, ackQoS byte)
	// closed reports why the connection ended, once; nil error when
	// mqplan closed it on purpose.
	closed func(err error)
}

// mqttConn is one MQTT 5 connection.
type mqttConn struct {
	nc        net.Conn
	br        *bufio.Reader
	version   byte // MQTT protocol level: 3, 4 or 5
	now       func() int64
	h         connHandlers
	keepalive time.Duration

	wmu  sync.Mutex
	wbuf []byte
	werr error
	// writing is set while a write is in the socket: a writer found there
	// again and again is stuck on a broker that reads nothing.
	writing atomic.Bool

	// lastWrite and lastRead (ns since the epoch) drive keepalive pings
	// and dead-connection detection (see pinger).
	lastWrite atomic.Int64
	lastRead  atomic.Int64
	// pingsOut counts PINGREQs the broker has not answered yet (it
	// answers them in order); probed says the end-of-publishing probe
	// was sent (see probe).
	pingsOut atomic.Int32
	probed   atomic.Bool

	// window holds one token per free in-flight slot; publish takes one
	// and the acknowledgement gives it back.
	window   chan struct{}
	idMu     sync.Mutex
	freeIDs  []uint16
	inflight []inflightMsg // indexed by packet id
	pending  atomic.Int32  // QoS 1/2 publishes awaiting their ack
	// serverMaxQoS is the CONNACK's Maximum QoS (2 when absent).
	serverMaxQoS byte
	// noSharedSubs: the CONNACK said shared subscriptions are not
	// available (MQTT 5 Shared Subscription Available = 0).
	noSharedSubs bool
	// sessionPresent is the CONNACK's flag: the broker kept the session
	// (and so the subscriptions) from an earlier connection.
	sessionPresent bool

	subMu   sync.Mutex
	subWait map[uint16]chan *packets.Suback

	rbuf []byte
	// acks are acknowledgements waiting to be written (reader goroutine only).
	acks []byte
	done chan struct{}
	// readerDone is closed when the reader goroutine has returned: from
	// then on nothing touches the receive-side state the reader owns.
	readerDone chan struct{}
	closeOnce  sync.Once
	closing    atomic.Bool
	closeErr   error
}

// dialMQTT connects and completes CONNECT/CONNACK within opts.timeout.
func dialMQTT(ctx context.Context, t target, opts connectOptions, now func() int64, h connHandlers) (*mqttConn, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	nc, err := dialTransport(ctx, t, opts.sourceAddr)
	if err != nil {
		return nil, err
	}
	if opts.version == 0 {
		opts.version = 5
	}
	c := &mqttConn{nc: nc, br: bufio.NewReaderSize(nc, readBufferSize), version: opts.version, now: now, h: h, keepalive: opts.keepalive, done: make(chan struct{}), readerDone: make(chan struct{}), serverMaxQoS: 2}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	err = c.handshake(opts)
	stop()
	if err != nil {
		_ = nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	at := now()
	c.lastRead.Store(at)
	c.lastWrite.Store(at)
	go c.readLoop()
	return c, nil
}

// handshake sends CONNECT and reads the CONNACK.
func (c *mqttConn) handshake(o connectOptions) error {
	if c.version < 5 {
		return c.handshake311(o)
	}
	rm := uint16(receiveMaximum)
	se := uint32(o.sessionExpiry / time.Second)
	cp := &packets.Connect{
		ProtocolName:    "MQTT",
		ProtocolVersion: 5,
		ClientID:        o.clientID,
		KeepAlive:       uint16(o.keepalive / time.Second),
		CleanStart:      o.cleanStart,
		Properties:      &packets.Properties{ReceiveMaximum: &rm, SessionExpiryInterval: &se},
	}
	if o.username != "" {
		cp.Username, cp.UsernameFlag = o.username, true
	}
	if len(o.password) > 0 {
		cp.Password, cp.PasswordFlag = o.password, true
	}
	if w := o.will; w != nil {
		cp.WillFlag, cp.WillTopic, cp.WillMessage, cp.WillQOS, cp.WillRetain = true, w.WillTopic, w.WillMessage, w.WillQOS, w.WillRetain
		cp.WillProperties = &packets.Properties{}
	}
	if err := c.writePacket(cp.WriteTo); err != nil {
		return err
	}
	typ, body, err := c.readPacket()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the broker closed the connection before CONNACK: it refused the CONNECT or does not speak MQTT 5; try broker.protocol: 4")
		}
		return err
	}
	if typ>>4 != pktConnack {
		return fmt.Errorf("expected CONNACK, got packet type %d", typ>>4)
	}
	if len(body) == 2 {
		// No properties: an MQTT 3.1.1 CONNACK, which is how a broker
		// that speaks only 3.1.1 refuses protocol level 5.
		return fmt.Errorf("the broker answered in MQTT 3.1.1 (%s): it does not speak MQTT 5; try broker.protocol: 4", connackReason311(body[1]))
	}
	ca := &packets.Connack{Properties: &packets.Properties{}}
	if err := ca.Unpack(bytes.NewBuffer(bytes.Clone(body))); err != nil {
		return fmt.Errorf("malformed CONNACK: %w", err)
	}
	c.sessionPresent = ca.SessionPresent
	if ca.ReasonCode >= 0x80 {
		msg := "CONNACK refused: " + reasonName(ca.ReasonCode)
		if ca.Properties.ReasonString != "" {
			msg += " (" + ca.Properties.ReasonString + ")"
		}
		return errors.New(msg)
	}
	window := maxInflight
	if p := ca.Properties.ReceiveMaximum; p != nil && int(*p) < window {
		window = int(*p)
	}
	if p := ca.Properties.ServerKeepAlive; p != nil {
		c.keepalive = time.Duration(*p) * time.Second
	}
	if p := ca.Properties.MaximumQOS; p != nil {
		c.serverMaxQoS = *p
	}
	c.noSharedSubs = ca.Properties.SharedSubAvailable != nil && *ca.Properties.SharedSubAvailable == 0
	c.initWindow(window)
	return nil
}

// handshake311 is handshake for MQTT 3.1 and 3.1.1, which have no
// properties: the packets are simple enough to write here.
func (c *mqttConn) handshake311(o connectOptions) error {
	name, level := "MQTT", byte(4)
	if c.version == 3 {
		name, level = "MQIsdp", 3
	}
	var flags byte
	if o.cleanStart {
		flags |= 0x02
	}
	body := appendString(nil, name)
	body = append(body, level, 0, byte(o.keepalive/time.Second>>8), byte(o.keepalive/time.Second))
	body = appendString(body, o.clientID)
	if w := o.will; w != nil {
		flags |= 0x04 | w.WillQOS<<3
		if w.WillRetain {
			flags |= 0x20
		}
		body = appendString(body, w.WillTopic)
		body = appendString(body, string(w.WillMessage))
	}
	if o.username != "" {
		flags |= 0x80
		body = appendString(body, o.username)
	}
	if len(o.password) > 0 {
		flags |= 0x40
		body = appendString(body, string(o.password))
	}
	body[len(name)+3] = flags
	pkt := appendVBI([]byte{pktConnect << 4}, len(body))
	pkt = append(pkt, body...)
	c.wmu.Lock()
	err := c.writeLocked(pkt)
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	typ, resp, err := c.readPacket()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("the broker closed the connection before CONNACK (does it speak MQTT %s?)", protocolName(c.version))
		}
		return err
	}
	if typ>>4 != pktConnack || len(resp) < 2 {
		return fmt.Errorf("expected CONNACK, got packet type %d", typ>>4)
	}
	if code := resp[1]; code != 0 {
		return errors.New("CONNACK refused: " + connackReason311(code))
	}
	c.sessionPresent = resp[0]&1 == 1
	c.initWindow(maxInflight)
	return nil
}

// appendString appends an MQTT UTF-8 string: a 2-byte length, then bytes.
func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// protocolName names a protocol level for messages.
func protocolName(v byte) string {
	switch v {
	case 3:
		return "3.1"
	case 4:
		return "3.1.1"
	}
	return "5"
}

// connackReason311 names MQTT 3.1/3.1.1 CONNACK return codes.
func connackReason311(code byte) string {
	switch code {
	case 1:
		return "unacceptable protocol version"
	case 2:
		return "client identifier rejected"
	case 3:
		return "server unavailable"
	case 4:
		return "bad user name or password"
	case 5:
		return "not authorized"
	}
	return fmt.Sprintf("return code %d", code)
}

// initWindow sizes the in-flight window. The slots are allocated only
// when the first QoS 1/2 message is published, so that subscribers and
// idle clients do not pay for them.
func (c *mqttConn) initWindow(n int) {
	c.window = make(chan struct{}, n)
}

// subscribeID is the packet id of SUBSCRIBE; publishes use the ids after
// it, so that a client subscribing again after a reconnect never reuses
// the id of one of its publishes still in flight.
const subscribeID = 1

func (c *mqttConn) allocWindow() {
	n := cap(c.window)
	c.inflight = make([]inflightMsg, n+subscribeID+1)
	c.freeIDs = make([]uint16, 0, n)
	for id := n + subscribeID; id > subscribeID; id-- {
		c.freeIDs = append(c.freeIDs, uint16(id))
	}
}

// readPacket reads one packet: its first byte (type and flags) and its
// body, which is valid until the next call.
func (c *mqttConn) readPacket() (b0 byte, body []byte, err error) {
	b0, err = c.br.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := readVBI(c.br)
	if err != nil {
		return 0, nil, err
	}
	if n > maxPacketSize {
		return 0, nil, fmt.Errorf("packet of %d bytes is over mqplan's limit of %d", n, maxPacketSize)
	}
	if n <= c.br.Size() {
		// Zero copy: the body stays in the reader's buffer until the
		// next read, which is after the caller is done with it.
		body, err = c.br.Peek(n)
		if err != nil {
			return 0, nil, err
		}
		_, _ = c.br.Discard(n)
		return b0, body, nil
	}
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n)
	}
	body = c.rbuf[:n]
	if _, err := io.ReadFull(c.br, body); err != nil {
		return 0, nil, err
	}
	return b0, body, nil
}

// readVBI reads an MQTT variable byte integer.
func readVBI(r io.ByteReader) (int, error) {
	v, mul := 0, 1
	for i := 0; i < 4; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v += int(b&0x7f) * mul
		if b&0x80 == 0 {
			return v, nil
		}
		mul <<= 7
	}
	return 0, errors.New("malformed remaining length")
}

// appendVBI appends n as an MQTT variable byte integer.
func appendVBI(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// readLoop handles every packet from the broker until the connection ends.
//
// Acknowledgements are queued while more packets are already buffered and
// written together before the reader would wait for the network: under
// load one write carries many PUBACKs, and when packets arrive one at a
// time each ack still leaves at once, so nothing is delayed.
func (c *mqttConn) readLoop() {
	defer close(c.readerDone)
	for {
		if c.br.Buffered() == 0 && len(c.acks) > 0 {
			if err := c.flushAcks(); err != nil {
				c.close(err)
				return
			}
		}
		b0, body, err := c.readPacket()
		if err != nil {
			c.close(err)
			return
		}
		c.lastRead.Store(c.now())
		if err := c.handle(b0, body); err != nil {
			c.close(err)
			return
		}
	}
}

// queueAck adds a 4-byte acknowledgement to the reader's pending acks.
func (c *mqttConn) queueAck(b0 byte, id uint16) {
	c.acks = append(c.acks, b0, 2, byte(id>>8), byte(id))
}

// flushAcks writes the pending acknowledgements in one write.
func (c *mqttConn) flushAcks() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	var err error
	if _, ws := c.nc.(*wsConn); ws {
		// Over WebSocket each packet travels in a frame of its own.
		for i := 0; i+4 <= len(c.acks) && err == nil; i += 4 {
			err = c.writeLocked(c.acks[i : i+4])
		}
	} else {
		err = c.writeLocked(c.acks)
	}
	c.acks = c.acks[:0]
	return err
}

// handle processes one packet on the reader goroutine.
func (c *mqttConn) handle(b0 byte, body []byte) error {
	switch b0 >> 4 {
	case pktPublish:
		qos := (b0 >> 1) & 3
		if len(body) < 2 {
			return errors.New("malformed PUBLISH")
		}
		i := 2 + int(binary.BigEndian.Uint16(body))
		var id uint16
		if qos > 0 {
			if i+2 > len(body) {
				return errors.New("malformed PUBLISH")
			}
			id = binary.BigEndian.Uint16(body[i:])
			i += 2
		}
		if c.version >= 5 {
			plen, n, ok := vbiAt(body, i)
			if !ok || i+n+plen > len(body) {
				return errors.New("malformed PUBLISH properties")
			}
			i += n + plen
		}
		if i > len(body) {
			return errors.New("malformed PUBLISH")
		}
		if c.h.publish != nil {
			c.h.publish(body[i:], b0&1 != 0)
		}
		switch qos {
		case 1:
			c.queueAck(pktPuback<<4, id)
		case 2:
			c.queueAck(pktPubrec<<4, id)
		}
	case pktPuback, pktPubcomp:
		id, reason, err := ackFields(body)
		if err != nil {
			return err
		}
		ackQoS := byte(1) // PUBACK
		if b0>>4 == pktPubcomp {
			ackQoS = 2
		}
		c.complete(id, reason, ackQoS)
	case pktPubrec:
		id, reason, err := ackFields(body)
		if err != nil {
			return err
		}
		if reason >= 0x80 {
			c.complete(id, reason, 2)
			return nil
		}
		c.idMu.Lock()
		if int(id) < len(c.inflight) && c.inflight[id].used {
			c.inflight[id].released = true
		}
		c.idMu.Unlock()
		c.queueAck(pktPubrel<<4|2, id)
	case pktPubrel:
		id, _, err := ackFields(body)
		if err != nil {
			return err
		}
		c.queueAck(pktPubcomp<<4, id)
	case pktSuback:
		if c.version < 5 {
			// MQTT 3.1/3.1.1: packet id, then one return code a filter.
			if len(body) < 2 {
				return errors.New("malformed SUBACK")
			}
			c.deliverSuback(&packets.Suback{PacketID: binary.BigEndian.Uint16(body), Reasons: bytes.Clone(body[2:])})
			return nil
		}
		// Copied: the decoded reason codes alias the buffer, which the
		// next read overwrites while the subscriber reads them.
		sa := &packets.Suback{Properties: &packets.Properties{}}
		if err := sa.Unpack(bytes.NewBuffer(bytes.Clone(body))); err != nil {
			return fmt.Errorf("malformed SUBACK: %w", err)
		}
		c.deliverSuback(sa)
	case pktPingresp:
		if c.pingsOut.Load() > 0 {
			c.pingsOut.Add(-1)
		}
	case pktDisconnect:
		reason := byte(0)
		if len(body) > 0 {
			reason = body[0]
		}
		return fmt.Errorf("broker sent DISCONNECT: %s", reasonName(reason))
	default:
		return fmt.Errorf("unexpected packet type %d from the broker", b0>>4)
	}
	return nil
}

// deliverSuback hands a SUBACK to the subscribe call waiting for it.
func (c *mqttConn) deliverSuback(sa *packets.Suback) {
	c.subMu.Lock()
	ch := c.subWait[sa.PacketID]
	delete(c.subWait, sa.PacketID)
	c.subMu.Unlock()
	if ch != nil {
		ch <- sa
	}
}

// vbiAt decodes a variable byte integer at b[i:].
func vbiAt(b []byte, i int) (v, n int, ok bool) {
	mul := 1
	for n < 4 && i+n < len(b) {
		d := b[i+n]
		v += int(d&0x7f) * mul
		n++
		if d&0x80 == 0 {
			return v, n, true
		}
		mul <<= 7
	}
	return 0, 0, false
}

// ackFields reads a PUBACK/PUBREC/PUBREL/PUBCOMP body: the packet id and
// the reason code (0 when left out, as MQTT 5 allows).
func ackFields(body []byte) (uint16, byte, error) {
	if len(body) < 2 {
		return 0, 0, errors.New("malformed acknowledgement")
	}
	reason := byte(0)
	if len(body) > 2 {
		reason = body[2]
	}
	return binary.BigEndian.Uint16(body), reason, nil
}

// complete ends a QoS 1/2 publish: its latency is reported and its slot
// and packet id are freed.
func (c *mqttConn) complete(id uint16, reason, ackQoS byte) {
	c.idMu.Lock()
	if int(id) >= len(c.inflight) || !c.inflight[id].used {
		c.idMu.Unlock()
		return // not ours (or already completed): ignore, as MQTT allows
	}
	m := c.inflight[id]
	c.inflight[id] = inflightMsg{}
	c.freeIDs = append(c.freeIDs, id)
	c.idMu.Unlock()
	c.pending.Add(-1)
	<-c.window
	if c.h.acked != nil {
		c.h.acked(m, time.Duration(c.now()-m.sent), reason, ackQoS)
	}
}

// writeLocked writes one whole packet; wmu must be held.
func (c *mqttConn) writeLocked(p []byte) error {
	c.writing.Store(true)
	_, err := c.nc.Write(p)
	c.writing.Store(false)
	if err != nil {
		c.werr = err
		return err
	}
	c.lastWrite.Store(c.now())
	return nil
}

// writePacket encodes a paho packet into the write buffer and sends it.
func (c *mqttConn) writePacket(encode func(io.Writer) (int64, error)) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	var b bytes.Buffer
	if _, err := encode(&b); err != nil {
		return err
	}
	return c.writeLocked(b.Bytes())
}

// publish sends one PUBLISH. For QoS 1/2 it first takes an in-flight slot
// (waiting while the window is full, which the caller sees as schedule
// lag) and records m under the packet id; the reader reports the ack.
// It does not allocate.
func (c *mqttConn) publish(ctx context.Context, topic string, qos byte, retain bool, payload []byte, m inflightMsg) error {
	if qos > c.serverMaxQoS {
		return fmt.Errorf("the broker allows QoS %d at most, the plan publishes at QoS %d", c.serverMaxQoS, qos)
	}
	var id uint16
	if qos > 0 {
		select {
		case c.window <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return errConnClosed
		}
		c.idMu.Lock()
		if c.inflight == nil {
			c.allocWindow()
		}
		id = c.freeIDs[len(c.freeIDs)-1]
		c.freeIDs = c.freeIDs[:len(c.freeIDs)-1]
		m.qos, m.used, m.sent = qos, true, c.now()
		c.inflight[id] = m
		c.idMu.Unlock()
		c.pending.Add(1)
	}
	err := c.writePublish(topic, qos, retain, false, id, payload)
	if err != nil && qos > 0 {
		// Not sent: nothing for a resumed session to send again.
		c.release(id)
	}
	return err
}

// release frees a publish's slot and packet id without reporting an ack.
func (c *mqttConn) release(id uint16) {
	c.idMu.Lock()
	if int(id) >= len(c.inflight) || !c.inflight[id].used {
		c.idMu.Unlock()
		return
	}
	c.inflight[id] = inflightMsg{}
	c.freeIDs = append(c.freeIDs, id)
	c.idMu.Unlock()
	c.pending.Add(-1)
	<-c.window
}

// writePublish writes one PUBLISH (dup marks a resend). It does not
// allocate.
func (c *mqttConn) writePublish(topic string, qos byte, retain, dup bool, id uint16, payload []byte) error {
	c.wmu.Lock()
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	b0 := byte(pktPublish<<4) | qos<<1
	if retain {
		b0 |= 1
	}
	if dup {
		b0 |= 8
	}
	rl := 2 + len(topic) + len(payload)
	if qos > 0 {
		rl += 2
	}
	if c.version >= 5 {
		rl++ // the empty properties
	}
	w := append(c.wbuf[:0], b0)
	w = appendVBI(w, rl)
	w = binary.BigEndian.AppendUint16(w, uint16(len(topic)))
	w = append(w, topic...)
	if qos > 0 {
		w = binary.BigEndian.AppendUint16(w, id)
	}
	if c.version >= 5 {
		w = append(w, 0) // no properties
	}
	w = append(w, payload...)
	c.wbuf = w
	err := c.writeLocked(w)
	c.wmu.Unlock()
	return err
}

// adopt takes over the QoS 1/2 publishes that old, a connection of the
// same client that dropped, left unacknowledged, when the broker resumed
// the session: MQTT has the client send them again under the same packet
// ids. It returns their ids in the order they were first sent; the
// caller then calls resend for each before publishing anything new.
// Entries that do not fit the new window (the broker lowered its Receive
// Maximum) are dropped, and counted in the second result.
func (c *mqttConn) adopt(old *mqttConn) (ids []uint16, dropped int) {
	type entry struct {
		id uint16
		m  inflightMsg
	}
	var moved []entry
	old.idMu.Lock()
	for id := range old.inflight {
		if m := old.inflight[id]; m.used {
			moved = append(moved, entry{uint16(id), m})
			old.inflight[id] = inflightMsg{} // a late ack on old is ignored
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

// resend sends an adopted publish again: its PUBLISH with the DUP flag,
// or its PUBREL when the broker had already sent PUBREC (QoS 2). payload
// is rebuilt by the caller from the entry's seq and intended time.
func (c *mqttConn) resend(id uint16, topic string, retain bool, payload []byte) error {
	c.idMu.Lock()
	m := c.inflight[id]
	c.idMu.Unlock()
	if m.released {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if c.werr != nil {
			return c.werr
		}
		return c.writeLocked([]byte{pktPubrel<<4 | 2, 2, byte(id >> 8), byte(id)})
	}
	return c.writePublish(topic, m.qos, retain, true, id, payload)
}

// takeUnacked removes and returns the QoS 1/2 publishes still awaiting
// their PUBACK or PUBREC (a QoS 2 message whose PUBREC came in is the
// broker's responsibility and is left out). A late ack on the connection
// is then ignored.
func (c *mqttConn) takeUnacked(into []inflightMsg) []inflightMsg {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	for id := range c.inflight {
		if m := c.inflight[id]; m.used && !m.released {
			into = append(into, m)
			c.inflight[id] = inflightMsg{}
		}
	}
	return into
}

// inflightAt returns the adopted entry under id.
func (c *mqttConn) inflightAt(id uint16) inflightMsg {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	return c.inflight[id]
}

// subscribe sends one SUBSCRIBE with every filter and waits for the
// SUBACK's reason codes (one per filter).
func (c *mqttConn) subscribe(ctx context.Context, subs []packets.SubOptions) ([]byte, error) {
	const id = subscribeID
	ch := make(chan *packets.Suback, 1)
	c.subMu.Lock()
	if c.subWait == nil {
		c.subWait = map[uint16]chan *packets.Suback{}
	}
	c.subWait[id] = ch
	c.subMu.Unlock()
	if c.version >= 5 {
		sp := &packets.Subscribe{PacketID: id, Subscriptions: subs, Properties: &packets.Properties{}}
		if err := c.writePacket(sp.WriteTo); err != nil {
			return nil, err
		}
	} else {
		body := binary.BigEndian.AppendUint16(nil, id)
		for _, s := range subs {
			body = appendString(body, s.Topic)
			body = append(body, s.QoS)
		}
		pkt := appendVBI([]byte{pktSubscribe<<4 | 2}, len(body))
		pkt = append(pkt, body...)
		c.wmu.Lock()
		err := c.writeLocked(pkt)
		c.wmu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	select {
	case sa := <-ch:
		return sa.Reasons, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.closeErr
	}
}

// ping sends PINGREQ when nothing was sent for half the keepalive, and
// closes a connection that heard nothing for one and a half keepalives
// (MQTT's own rule for the broker side).
func (c *mqttConn) ping(now int64) {
	if c.keepalive <= 0 {
		return
	}
	ka := int64(c.keepalive)
	if now-c.lastRead.Load() > ka+ka/2 {
		c.close(fmt.Errorf("no packet from the broker for %s (keepalive %s)", time.Duration(now-c.lastRead.Load()).Round(time.Second), c.keepalive))
		return
	}
	if now-c.lastWrite.Load() >= ka/2 {
		c.wmu.Lock()
		if c.werr == nil {
			// Counted before the write: the answer may come before
			// writeLocked returns.
			c.pingsOut.Add(1)
			_ = c.writeLocked([]byte{pktPingreq << 4, 0})
		}
		c.wmu.Unlock()
	}
}

// probe sends a PINGREQ whose answer shows that the broker still reads
// this connection, and so read everything written before it. A QoS 0
// publisher gets no acknowledgement: without the probe, a broker that
// stopped reading (paused, hung) takes a plan of QoS 0 publishers alone
// to PASS, their publishes sitting in socket buffers. The write may block
// on such a broker until the connection is closed, so the caller runs
// probe on a goroutine of its own.
func (c *mqttConn) probe() {
	c.probed.Store(true)
	c.pingsOut.Add(1)
	c.wmu.Lock()
	if c.werr == nil {
		_ = c.writeLocked([]byte{pktPingreq << 4, 0})
	}
	c.wmu.Unlock()
}

// probeAnswered reports whether the probe, if one was sent, and every
// PINGREQ before it have been answered.
func (c *mqttConn) probeAnswered() bool {
	return !c.probed.Load() || c.pingsOut.Load() == 0
}

// disconnect sends DISCONNECT (normal) and closes the connection.
func (c *mqttConn) disconnect() {
	c.closing.Store(true)
	// The deadline comes before the lock: a writer stuck on a stalled
	// broker holds the lock, and the deadline is what releases it.
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.wmu.Lock()
	if c.werr == nil {
		_, _ = c.nc.Write([]byte{pktDisconnect << 4, 0})
	}
	c.wmu.Unlock()
	c.close(nil)
}

// close ends the connection once and reports why.
func (c *mqttConn) close(err error) {
	c.closeOnce.Do(func() {
		if c.closing.Load() {
			err = nil
		}
		c.closeErr = err
		if c.closeErr == nil {
			c.closeErr = errConnClosed
		}
		_ = c.nc.Close()
		close(c.done)
		if c.h.closed != nil {
			c.h.closed(err)
		}
	})
}

// reasonNames are the MQTT 5 reason codes (the specification's table
// 2-6) that brokers send in CONNACK, PUBACK, PUBREC, SUBACK and
// DISCONNECT. From 0x80 up each code has one meaning whatever the packet,
// so one table names them all.
var reasonNames = map[byte]string{
	0x00: "normal disconnection",
	0x04: "disconnect with will message",
	0x80: "unspecified error",
	0x81: "malformed packet",
	0x82: "protocol error",
	0x83: "implementation specific error",
	0x84: "unsupported protocol version",
	0x85: "client identifier not valid",
	0x86: "bad user name or password",
	0x87: "not authorized",
	0x88: "server unavailable",
	0x89: "server busy",
	0x8A: "banned",
	0x8B: "server shutting down",
	0x8C: "bad authentication method",
	0x8D: "keep alive timeout",
	0x8E: "session taken over",
	0x8F: "topic filter invalid",
	0x90: "topic name invalid",
	0x91: "packet identifier in use",
	0x93: "receive maximum exceeded",
	0x94: "topic alias invalid",
	0x95: "packet too large",
	0x96: "message rate too high",
	0x97: "quota exceeded",
	0x98: "administrative action",
	0x99: "payload format invalid",
	0x9A: "retain not supported",
	0x9B: "QoS not supported",
	0x9C: "use another server",
	0x9D: "server moved",
	0x9E: "shared subscriptions not supported",
	0x9F: "connection rate exceeded",
	0xA0: "maximum connect time",
	0xA1: "subscription identifiers not supported",
	0xA2: "wildcard subscriptions not supported",
}

// reasonName names an MQTT 5 reason code with its number, as
// "packet too large (0x95)", so that a user can look it up either way.
func reasonName(code byte) string {
	if n, ok := reasonNames[code]; ok {
		return fmt.Sprintf("%s (0x%02X)", n, code)
	}
	return fmt.Sprintf("reason code 0x%02X", code)
}
