package mqttc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/eclipse/paho.golang/packets"
)

// This file is the connection: dial and CONNECT/CONNACK, publish,
// subscribe, ping, disconnect, and the read loop.

// receiveMaximum is the Receive Maximum sent in every MQTT 5 CONNECT: how
// many QoS 1/2 deliveries the broker may have in flight to one client.
// Ours are acknowledged as soon as they are read, so 64 never throttles a
// subscriber on a real link, and it bounds what a broker queues at us.
const receiveMaximum = 64

// readBufferSize is the per-connection read buffer: one read syscall can
// bring several small packets, and packets that fit are decoded in place.
// 2 KiB holds a 1 KB message whole at a modest cost per idle connection.
const readBufferSize = 2048

// ErrClosed is returned by operations on a closed connection.
var ErrClosed = errors.New("connection closed")

// Options are what one CONNECT says, and how long connecting may take
// from where.
type Options struct {
	// ClientID is the client identifier ("" asks the broker for one,
	// which 3.1 does not allow).
	ClientID string
	// Username is sent when not "".
	Username string
	// Password is sent when not empty.
	Password []byte
	// Keepalive is the keepalive asked for; 0 turns it off. The broker's
	// Server Keep Alive (MQTT 5) replaces it.
	Keepalive time.Duration
	// CleanStart asks for a new session (CleanSession at 3.1/3.1.1);
	// without it the broker resumes the client's session if it kept one.
	CleanStart bool
	// SessionExpiry is how long the broker keeps the session after the
	// connection ends (MQTT 5; at 3.1.1 CleanStart alone says it).
	SessionExpiry time.Duration
	Will          *Will // nil: none
	// Timeout bounds dialing, the TLS and WebSocket handshakes, and
	// CONNECT/CONNACK together.
	Timeout time.Duration
	// SourceAddr is the local IP address to connect from ("" for any).
	SourceAddr string
	// Version is the MQTT protocol level: Version31, Version311 or
	// Version5 (0 means 5).
	Version byte
	// Inflight, when above 0, caps the in-flight window (the QoS 1/2
	// publishes awaiting their acknowledgement) below the default of 256
	// and the broker's Receive Maximum: a closed-loop publisher's window,
	// which Publish then enforces by waiting for a free slot.
	Inflight int
}

// Will is the message the broker publishes for a client that goes away
// without DISCONNECT.
type Will struct {
	// Topic and Payload are the message's.
	Topic   string
	Payload []byte
	// QoS and Retain are what the broker publishes it with.
	QoS    byte
	Retain bool
}

// Subscription is one topic filter of a SUBSCRIBE, with the MQTT 5
// subscription options (5.0 §3.8.3.1), which MQTT 3.1/3.1.1 do not send.
type Subscription struct {
	// Filter is the topic filter, $share/... included.
	Filter string
	// QoS is the highest QoS asked for the deliveries.
	QoS byte
	// NoLocal: no delivery of the client's own publishes.
	NoLocal bool
	// RetainAsPublished: deliveries keep the publisher's retain flag.
	RetainAsPublished bool
	// RetainHandling says when retained messages are sent at subscribe
	// time: 0 always, 1 for a new subscription only, 2 never.
	RetainHandling byte
}

// Ack is the end of one QoS 1/2 publish.
type Ack struct {
	// Token is what the caller gave Publish.
	Token Token
	// QoS is the QoS it was published at.
	QoS byte
	// AckQoS is the QoS the acknowledgement's packet type belongs to
	// (PUBACK 1; PUBREC and PUBCOMP 2): a QoS 2 publish answered with
	// PUBACK was downgraded by the broker.
	AckQoS byte
	// Reason is the ack's reason code: from ReasonFailure up, the broker
	// refused the message.
	Reason ReasonCode
	// Latency is the time from the write of the PUBLISH to the ack.
	Latency time.Duration
}

// Handlers are the callbacks of a connection. Deliver and Acked run on its
// reader goroutine, one at a time, and must not block: the reader
// acknowledges deliveries and reads acks, so a blocked handler stalls
// both. Closed runs on whichever goroutine ended the connection.
type Handlers struct {
	// Deliver receives the payload of each delivery and its retain flag;
	// the slice is only valid during the call.
	Deliver func(payload []byte, retained bool)
	// Message, when set, receives each delivery with its topic instead of
	// Deliver, for a connection that must tell topics apart (the runner's
	// $SYS monitor); both slices are only valid during the call. A
	// delivery whose topic is an MQTT 5 topic alias has an empty topic:
	// no CONNECT here allows aliases, so a broker should not send one.
	Message func(topic, payload []byte, retained bool)
	// Request, when set, receives instead of Deliver each MQTT 5 delivery
	// that carries a response topic or correlation data (a request, or an
	// answer to one: 5.0 §4.10) with them, read in place: every slice is
	// only valid during the call. A delivery with neither still goes to
	// Deliver.
	Request func(payload []byte, retained bool, r Request[[]byte])
	// DeliverProps, when set, receives instead of Deliver each delivery
	// Request does not take, with its MQTT 5 property list (empty below
	// MQTT 5), for a receiver that reads a user property (UserProperty);
	// both slices are only valid during the call.
	DeliverProps func(props, payload []byte, retained bool)
	// Acked reports the end of a QoS 1/2 publish.
	Acked func(Ack)
	// Closed reports why the connection ended, once; nil error when the
	// caller closed it on purpose (Disconnect).
	Closed func(err error)
}

// Conn is one MQTT connection, at any protocol version. See the package
// doc for which goroutine owns what.
type Conn struct {
	nc        net.Conn
	br        *bufio.Reader
	src       sockReader // what br reads from (rawread.go)
	version   byte       // Version31, Version311 or Version5
	now       func() int64
	h         Handlers
	keepalive time.Duration

	wmu  sync.Mutex
	wbuf []byte
	werr error
	// pend is the unwritten tail a write that never waits left behind
	// (trywrite.go): every writer sends it first. rc, tryFn and the try
	// fields are that write's (nil rc: not a plain TCP connection).
	pend   []byte
	rc     syscall.RawConn
	tryFn  func(fd uintptr) bool
	tryBuf []byte
	tryN   int
	tryErr error
	// writing is set while a write is in the socket: a writer found there
	// again and again is stuck on a broker that reads nothing.
	writing atomic.Bool

	// lastWrite and lastRead (on the now clock) drive keepalive pings and
	// dead-connection detection (see Ping).
	lastWrite atomic.Int64
	lastRead  atomic.Int64
	// pingsOut counts PINGREQs the broker has not answered yet (it
	// answers them in order); probed says the end-of-publishing probe
	// was sent (see Probe).
	pingsOut atomic.Int32
	probed   atomic.Bool

	// window holds one token per free in-flight slot; publish takes one
	// and the acknowledgement gives it back.
	window   chan struct{}
	idMu     sync.Mutex
	freeIDs  []uint16
	inflight []inflight   // indexed by packet id
	pending  atomic.Int32 // QoS 1/2 publishes awaiting their ack
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
	// big is the packet being read into rbuf, when it does not fit the
	// read buffer: the raw read loop may leave it part-read while it
	// waits for the socket.
	big bigRead
	// acks are acknowledgements waiting to be written (reader goroutine only).
	acks []byte
	done chan struct{}
	// readerDone is closed when the reader goroutine has returned: from
	// then on nothing touches the receive-side state the reader owns.
	readerDone chan struct{}
	closeOnce  sync.Once
	closing    atomic.Bool
	// shut is set when the connection is being closed (rawread.go).
	shut atomic.Bool
	// leaving is set by Leave: the reader stops at its next read that fails.
	leaving atomic.Bool
	// leaveBy is when Leave gives up waiting (set before leaving).
	leaveBy  time.Time
	closeErr error
}

// newConn is a connection on nc, not started.
func newConn(nc net.Conn, version byte, now func() int64, h Handlers) *Conn {
	c := &Conn{nc: nc, src: sockReader{nc: nc, fd: -1}, version: version, now: now, h: h,
		done: make(chan struct{}), readerDone: make(chan struct{}), serverMaxQoS: 2}
	c.br = bufio.NewReaderSize(&c.src, readBufferSize)
	c.initTryWrite()
	return c
}

// Dial connects to t and completes CONNECT/CONNACK within o.Timeout, then
// starts the connection's reader goroutine. now is the caller's clock (ns
// from any epoch): latencies and keepalives are measured on it.
//
// A caller that dials again for a client whose connection dropped waits
// for the old connection's reader to return first (ReaderDone): the two
// connections' handlers share the client's state, and would otherwise run
// at once.
func Dial(ctx context.Context, t Target, o Options, now func() int64, h Handlers) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	nc, err := dialTransport(ctx, t, o.SourceAddr)
	if err != nil {
		return nil, err
	}
	if o.Version == 0 {
		o.Version = Version5
	}
	c := newConn(nc, o.Version, now, h)
	c.keepalive = o.Keepalive
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	err = c.handshake(o)
	stop()
	if err != nil {
		_ = nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	if o.Inflight > 0 && o.Inflight < cap(c.window) {
		c.initWindow(o.Inflight)
	}
	c.start()
	return c, nil
}

// NewConn runs a connection over nc, a stream on which CONNECT and CONNACK
// are already done, or never will be (a test playing the broker): the
// broker is taken to allow QoS 2, a window of maxInflight (256) and no
// keepalive. Its reader goroutine starts at once. Dial is the usual way in.
func NewConn(nc net.Conn, version byte, now func() int64, h Handlers) *Conn {
	c := newConn(nc, version, now, h)
	c.initWindow(maxInflight)
	c.start()
	return c
}

// start starts the reader goroutine.
func (c *Conn) start() {
	at := c.now()
	c.lastRead.Store(at)
	c.lastWrite.Store(at)
	c.startReader()
}

// handshake sends CONNECT and reads the CONNACK.
func (c *Conn) handshake(o Options) error {
	if c.version < Version5 {
		return c.handshake311(o)
	}
	rm := uint16(receiveMaximum)
	se := uint32(o.SessionExpiry / time.Second)
	cp := &packets.Connect{
		ProtocolName:    "MQTT",
		ProtocolVersion: Version5,
		ClientID:        o.ClientID,
		KeepAlive:       uint16(o.Keepalive / time.Second),
		CleanStart:      o.CleanStart,
		Properties:      &packets.Properties{ReceiveMaximum: &rm, SessionExpiryInterval: &se},
	}
	if o.Username != "" {
		cp.Username, cp.UsernameFlag = o.Username, true
	}
	if len(o.Password) > 0 {
		cp.Password, cp.PasswordFlag = o.Password, true
	}
	if w := o.Will; w != nil {
		cp.WillFlag, cp.WillTopic, cp.WillMessage, cp.WillQOS, cp.WillRetain = true, w.Topic, w.Payload, w.QoS, w.Retain
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
	if typ>>4 != TypeConnack {
		return fmt.Errorf("expected CONNACK, got packet type %d", typ>>4)
	}
	if len(body) == 2 {
		// No properties: an MQTT 3.1.1 CONNACK, which is how a broker
		// that speaks only 3.1.1 refuses protocol level 5.
		return fmt.Errorf("the broker answered in MQTT 3.1.1 (%s): it does not speak MQTT 5; try broker.protocol: 4", connackReturn311(body[1]))
	}
	ca := &packets.Connack{Properties: &packets.Properties{}}
	if err := ca.Unpack(bytes.NewBuffer(bytes.Clone(body))); err != nil {
		return fmt.Errorf("malformed CONNACK: %w", err)
	}
	c.sessionPresent = ca.SessionPresent
	if reason := ReasonCode(ca.ReasonCode); reason.Failed() {
		msg := "CONNACK refused: " + reason.String()
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
// properties: the packets are simple enough to encode here (codec.go).
func (c *Conn) handshake311(o Options) error {
	c.wmu.Lock()
	err := c.writeLocked(appendConnect311(nil, c.version, o))
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
	// CONNACK: acknowledge flags, then the return code (3.1.1 §3.2.2).
	if typ>>4 != TypeConnack || len(resp) < 2 {
		return fmt.Errorf("expected CONNACK, got packet type %d", typ>>4)
	}
	if code := resp[1]; code != 0 {
		return errors.New("CONNACK refused: " + connackReturn311(code))
	}
	c.sessionPresent = resp[0]&ConnackSessionPresent != 0
	c.initWindow(maxInflight)
	return nil
}

// readPacket reads one packet: its first byte (type and flags) and its
// body, which is valid until the next call. A packet that fits the read
// buffer is decoded in place and consumed only once it is there whole, so
// that errWouldBlock (the raw read loop) leaves nothing half-read; a larger
// one is read into rbuf and may be resumed (big).
func (c *Conn) readPacket() (b0 byte, body []byte, err error) {
	if c.big.n > 0 {
		return c.readBig()
	}
	hdr, err := c.br.Peek(2)
	if err != nil {
		return 0, nil, err
	}
	n, hl, ok := VBIAt(hdr, 1)
	for !ok {
		if len(hdr) == 5 {
			return 0, nil, errors.New("malformed remaining length")
		}
		if hdr, err = c.br.Peek(len(hdr) + 1); err != nil {
			return 0, nil, err
		}
		n, hl, ok = VBIAt(hdr, 1)
	}
	hl++ // the first byte
	if n > maxPacketSize {
		return 0, nil, fmt.Errorf("packet of %d bytes is over mqplan's limit of %d", n, maxPacketSize)
	}
	if hl+n <= c.br.Size() {
		// Zero copy: the body stays in the reader's buffer until the
		// next read, which is after the caller is done with it.
		pk, err := c.br.Peek(hl + n)
		if err != nil {
			return 0, nil, err
		}
		_, _ = c.br.Discard(hl + n)
		return pk[0], pk[hl:], nil
	}
	c.big = bigRead{b0: hdr[0], n: n}
	_, _ = c.br.Discard(hl)
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n)
	}
	return c.readBig()
}

// bigRead is a packet larger than the read buffer being read into rbuf.
type bigRead struct {
	b0     byte
	n, got int // its body's length, and how much of it is read
}

// readBig goes on reading the packet in big until it is whole.
func (c *Conn) readBig() (b0 byte, body []byte, err error) {
	body = c.rbuf[:c.big.n]
	for c.big.got < c.big.n {
		m, err := c.br.Read(body[c.big.got:])
		c.big.got += m
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, err
		}
	}
	b0 = c.big.b0
	c.big = bigRead{}
	return b0, body, nil
}

// readLoop handles every packet from the broker until the connection ends.
//
// Acknowledgements are queued while more packets are already buffered and
// written together before the reader would wait for the network: under
// load one write carries many PUBACKs, and when packets arrive one at a
// time each ack still leaves at once, so nothing is delayed.
func (c *Conn) readLoop() {
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
			if c.leaving.Load() {
				c.leave() // see Leave: what was buffered is handled
				return
			}
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
func (c *Conn) queueAck(typ byte, id uint16) {
	c.acks = appendAck(c.acks, typ, id)
}

// flushAcks writes the pending acknowledgements in one write.
func (c *Conn) flushAcks() error {
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
func (c *Conn) handle(b0 byte, body []byte) error {
	switch b0 >> 4 {
	case TypePublish:
		// Topic, packet id (QoS 1/2), properties (MQTT 5), payload: see
		// appendPublish.
		qos := (b0 & PublishQoSMask) >> PublishQoSShift
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
		var req Request[[]byte]
		var props []byte
		if c.version >= Version5 {
			plen, n, ok := VBIAt(body, i)
			if !ok || i+n+plen > len(body) {
				return errors.New("malformed PUBLISH properties")
			}
			props = body[i+n : i+n+plen]
			if plen > 0 && c.h.Request != nil {
				if req, ok = publishRequest(body[i+n : i+n+plen]); !ok {
					return errors.New("malformed PUBLISH properties")
				}
			}
			i += n + plen
		}
		if i > len(body) {
			return errors.New("malformed PUBLISH")
		}
		switch {
		case len(req.ResponseTopic) > 0 || len(req.Correlation) > 0:
			c.h.Request(body[i:], b0&PublishRetain != 0, req)
		case c.h.DeliverProps != nil:
			c.h.DeliverProps(props, body[i:], b0&PublishRetain != 0)
		case c.h.Message != nil:
			c.h.Message(body[2:2+int(binary.BigEndian.Uint16(body))], body[i:], b0&PublishRetain != 0)
		case c.h.Deliver != nil:
			c.h.Deliver(body[i:], b0&PublishRetain != 0)
		}
		switch qos {
		case 1:
			c.queueAck(TypePuback, id)
		case 2:
			c.queueAck(TypePubrec, id)
		}
	case TypePuback, TypePubcomp:
		id, reason, err := ackFields(body)
		if err != nil {
			return err
		}
		ackQoS := byte(1) // PUBACK
		if b0>>4 == TypePubcomp {
			ackQoS = 2
		}
		c.complete(id, reason, ackQoS)
	case TypePubrec:
		id, reason, err := ackFields(body)
		if err != nil {
			return err
		}
		if reason.Failed() {
			c.complete(id, reason, 2)
			return nil
		}
		c.markReleased(id)
		c.queueAck(TypePubrel, id)
	case TypePubrel:
		id, _, err := ackFields(body)
		if err != nil {
			return err
		}
		c.queueAck(TypePubcomp, id)
	case TypeSuback:
		if c.version < Version5 {
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
	case TypePingresp:
		if c.pingsOut.Load() > 0 {
			c.pingsOut.Add(-1)
		}
	case TypeDisconnect:
		reason := ReasonCode(0)
		if len(body) > 0 {
			reason = ReasonCode(body[0])
		}
		return fmt.Errorf("broker sent DISCONNECT: %s", reason)
	default:
		return fmt.Errorf("unexpected packet type %d from the broker", b0>>4)
	}
	return nil
}

// deliverSuback hands a SUBACK to the subscribe call waiting for it.
func (c *Conn) deliverSuback(sa *packets.Suback) {
	c.subMu.Lock()
	ch := c.subWait[sa.PacketID]
	delete(c.subWait, sa.PacketID)
	c.subMu.Unlock()
	if ch != nil {
		ch <- sa
	}
}

// writeLocked writes one whole packet, after the tail a stalled write
// left (trywrite.go), if any; wmu must be held.
func (c *Conn) writeLocked(p []byte) error {
	c.writing.Store(true)
	var err error
	if len(c.pend) > 0 {
		if _, err = c.nc.Write(c.pend); err == nil {
			c.pend = c.pend[:0]
		}
	}
	if err == nil && len(p) > 0 {
		_, err = c.nc.Write(p)
	}
	c.writing.Store(false)
	if err != nil {
		c.werr = err
		return err
	}
	c.lastWrite.Store(c.now())
	return nil
}

// writePacket encodes a paho packet into the write buffer and sends it.
func (c *Conn) writePacket(encode func(io.Writer) (int64, error)) error {
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

// Publish sends one PUBLISH. For QoS 1/2 it first takes an in-flight slot
// (waiting while the window is full, which the caller sees as schedule
// lag) and records token under the packet id; the reader reports the ack
// to Handlers.Acked. It does not allocate.
func (c *Conn) Publish(ctx context.Context, topic string, qos byte, retain bool, payload []byte, token Token) error {
	return c.PublishProps(ctx, topic, qos, retain, nil, payload, token)
}

// PublishProps is Publish with further MQTT 5 properties: props is their
// encoding without its length (AppendUserProperty), ignored below MQTT 5.
// It does not allocate.
func (c *Conn) PublishProps(ctx context.Context, topic string, qos byte, retain bool, props, payload []byte, token Token) error {
	if err := c.checkQoS(qos); err != nil {
		return err
	}
	var id uint16
	if qos > 0 {
		var err error
		if id, err = c.take(ctx, token, qos); err != nil {
			return err
		}
	}
	return c.sendPublish(topic, qos, retain, id, props, payload)
}

// checkQoS refuses a publish above the broker's Maximum QoS.
func (c *Conn) checkQoS(qos byte) error {
	if qos > c.serverMaxQoS {
		return fmt.Errorf("the broker allows QoS %d at most, the plan publishes at QoS %d", c.serverMaxQoS, qos)
	}
	return nil
}

// sendPublish writes a new PUBLISH whose in-flight slot (QoS 1/2) is taken
// under id, and frees the slot when the write fails: not sent, nothing for
// a resumed session to send again.
func (c *Conn) sendPublish(topic string, qos byte, retain bool, id uint16, props, payload []byte) error {
	err := c.writePublish(topic, qos, retain, false, id, props, payload)
	if err != nil && qos > 0 {
		c.release(id)
	}
	return err
}

// ErrWindowFull is TryPublishProps's answer when the in-flight window has
// no free slot: nothing was sent.
var ErrWindowFull = errors.New("mqttc: in-flight window full")

// TryPublishProps is PublishProps for a caller that must not wait (the
// runner's pacer, which writes for many publishers from one goroutine):
// when the in-flight window is full it sends nothing and returns
// ErrWindowFull, and the caller decides who waits. On a plain TCP
// connection the write does not wait either (trywrite.go): when the
// socket cannot take the whole packet, the message is still sent (its
// tail pending, written first by the connection's next writer) and the
// answer is ErrStalled; the caller then calls Flush where it may block.
// On any other connection (TryWrites false) the write blocks while the
// socket's buffer is full, as any write. It does not allocate.
func (c *Conn) TryPublishProps(topic string, qos byte, retain bool, props, payload []byte, token Token) error {
	if err := c.checkQoS(qos); err != nil {
		return err
	}
	var id uint16
	if qos > 0 {
		var ok bool
		if id, ok = c.tryTake(token, qos); !ok {
			return ErrWindowFull
		}
	}
	if c.rc == nil {
		return c.sendPublish(topic, qos, retain, id, props, payload)
	}
	c.wmu.Lock()
	err := c.werr
	stalled := false
	if err == nil {
		c.wbuf = appendPublishProps(c.wbuf[:0], c.version, topic, qos, retain, false, id, payload, Request[string]{Props: props})
		stalled, err = c.tryWriteLocked(c.wbuf)
	}
	c.wmu.Unlock()
	if err != nil {
		if qos > 0 {
			c.release(id)
		}
		return err
	}
	if stalled {
		return ErrStalled
	}
	return nil
}

// PublishRequest is Publish for a request (MQTT 5 only): the PUBLISH
// carries r's response topic and correlation data, so that a responder
// can answer without a lookup. It does not allocate. A request resent on
// a resumed session (Resend) goes without them: its answer is then
// missing, which the caller counts as a timeout.
func (c *Conn) PublishRequest(ctx context.Context, topic string, qos byte, payload []byte, token Token, r Request[string]) error {
	if c.version < Version5 {
		return errors.New("request/response needs MQTT 5")
	}
	if err := c.checkQoS(qos); err != nil {
		return err
	}
	var id uint16
	if qos > 0 {
		var err error
		if id, err = c.take(ctx, token, qos); err != nil {
			return err
		}
	}
	c.wmu.Lock()
	err := c.werr
	if err == nil {
		c.wbuf = appendPublishProps(c.wbuf[:0], c.version, topic, qos, false, false, id, payload, r)
		err = c.writeLocked(c.wbuf)
	}
	c.wmu.Unlock()
	if err != nil && qos > 0 {
		c.release(id)
	}
	return err
}

// Respond publishes the answer to a request received in Handlers.Request:
// payload to r's response topic, with r's correlation data (5.0 §4.10.2),
// at QoS 0, so that it can be called from the Request handler itself
// (a QoS 1/2 publish may wait for a PUBACK that only this reader can
// read). It does not allocate once the write buffer has grown.
func (c *Conn) Respond(r Request[[]byte], payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.wbuf = appendPublishProps(c.wbuf[:0], c.version, r.ResponseTopic, 0, false, false, 0, payload, Request[[]byte]{Correlation: r.Correlation})
	return c.writeLocked(c.wbuf)
}

// writePublish writes one PUBLISH (dup marks a resend) from the write
// buffer. It does not allocate once the buffer has grown to the message
// size.
func (c *Conn) writePublish(topic string, qos byte, retain, dup bool, id uint16, props, payload []byte) error {
	c.wmu.Lock()
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	c.wbuf = appendPublishProps(c.wbuf[:0], c.version, topic, qos, retain, dup, id, payload, Request[string]{Props: props})
	err := c.writeLocked(c.wbuf)
	c.wmu.Unlock()
	return err
}

// Subscribe sends one SUBSCRIBE with every filter and waits for the
// SUBACK's reason codes (one per filter: the QoS granted, or a failure).
func (c *Conn) Subscribe(ctx context.Context, subs []Subscription) ([]ReasonCode, error) {
	const id = subscribeID
	ch := make(chan *packets.Suback, 1)
	c.subMu.Lock()
	if c.subWait == nil {
		c.subWait = map[uint16]chan *packets.Suback{}
	}
	c.subWait[id] = ch
	c.subMu.Unlock()
	if c.version >= Version5 {
		opts := make([]packets.SubOptions, len(subs))
		for i, s := range subs {
			opts[i] = packets.SubOptions{Topic: s.Filter, QoS: s.QoS,
				NoLocal: s.NoLocal, RetainAsPublished: s.RetainAsPublished, RetainHandling: s.RetainHandling}
		}
		sp := &packets.Subscribe{PacketID: id, Subscriptions: opts, Properties: &packets.Properties{}}
		if err := c.writePacket(sp.WriteTo); err != nil {
			return nil, err
		}
	} else {
		c.wmu.Lock()
		err := c.writeLocked(appendSubscribe311(nil, id, subs))
		c.wmu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	select {
	case sa := <-ch:
		codes := make([]ReasonCode, len(sa.Reasons))
		for i, r := range sa.Reasons {
			codes[i] = ReasonCode(r)
		}
		return codes, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.closeErr
	}
}

// Ping sends PINGREQ when nothing was sent for half the keepalive, and
// closes a connection that heard nothing for one and a half keepalives
// (MQTT's own rule for the broker side). now is on the connection's
// clock. The caller calls it often enough (a quarter keepalive) from one
// goroutine for all its connections, instead of a timer each.
func (c *Conn) Ping(now int64) {
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
			_ = c.writeLocked(pingreqPacket[:])
		}
		c.wmu.Unlock()
	}
}

// Probe sends a PINGREQ whose answer shows that the broker still reads
// this connection, and so read everything written before it. A QoS 0
// publisher gets no acknowledgement: without the probe, a broker that
// stopped reading (paused, hung) takes a plan of QoS 0 publishers alone
// to PASS, their publishes sitting in socket buffers. The write may block
// on such a broker until the connection is closed, so the caller runs
// Probe on a goroutine of its own.
func (c *Conn) Probe() {
	c.probed.Store(true)
	c.pingsOut.Add(1)
	c.wmu.Lock()
	if c.werr == nil {
		_ = c.writeLocked(pingreqPacket[:])
	}
	c.wmu.Unlock()
}

// ProbeAnswered reports whether the probe, if one was sent, and every
// PINGREQ before it have been answered.
func (c *Conn) ProbeAnswered() bool {
	return !c.probed.Load() || c.pingsOut.Load() == 0
}

// Writing reports whether a write is in the socket right now: a writer
// found there again and again is stuck on a broker that reads nothing,
// and SetWriteDeadline releases it.
func (c *Conn) Writing() bool { return c.writing.Load() }

// SetWriteDeadline sets the deadline of the connection's writes (the zero
// time lifts it). It may be called while a write is blocked, to end it: the
// write then fails, and so do the connection's later writes.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.nc.SetWriteDeadline(t) }

// Disconnect sends DISCONNECT (normal) and closes the connection;
// Handlers.Closed then gets a nil error.
func (c *Conn) Disconnect() {
	c.writeDisconnect()
	c.close(nil)
}

// writeDisconnect marks the connection closing and writes DISCONNECT
// after a stalled write's tail; it reports whether DISCONNECT went out.
func (c *Conn) writeDisconnect() bool {
	c.closing.Store(true)
	// The deadline comes before the lock: a writer stuck on a stalled
	// broker holds the lock, and the deadline is what releases it.
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return false
	}
	if len(c.pend) > 0 {
		if _, err := c.nc.Write(c.pend); err != nil { // a stalled write's tail first
			return false
		}
	}
	_, err := c.nc.Write(disconnectPacket[:])
	return err == nil
}

// close ends the connection once and reports why.
func (c *Conn) close(err error) {
	c.closeOnce.Do(func() {
		if c.closing.Load() {
			err = nil
		}
		c.closeErr = err
		if c.closeErr == nil {
			c.closeErr = ErrClosed
		}
		// The raw read loop holds the socket while it reads, and Close
		// waits for it: shut makes it let go at the next packet.
		c.shut.Store(true)
		_ = c.nc.Close()
		close(c.done)
		if c.h.Closed != nil {
			c.h.Closed(err)
		}
	})
}

// Close closes the connection without DISCONNECT, as a lost connection
// ends (the broker publishes the will); Handlers.Closed gets a nil error.
func (c *Conn) Close() {
	c.closing.Store(true)
	c.close(nil)
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (ErrClosed when on purpose); valid once
// Done is closed.
func (c *Conn) Err() error { return c.closeErr }

// ReaderDone is closed when the reader goroutine has returned, which it
// does soon after the connection ends: from then on no handler runs for
// a delivery or an ack.
func (c *Conn) ReaderDone() <-chan struct{} { return c.readerDone }

// Version is the protocol level the connection speaks.
func (c *Conn) Version() byte { return c.version }

// SessionPresent is the CONNACK's flag: the broker kept the session (and
// so the subscriptions) of an earlier connection.
func (c *Conn) SessionPresent() bool { return c.sessionPresent }

// SharedSubsUnavailable reports that the CONNACK said shared
// subscriptions are not available (MQTT 5 Shared Subscription Available
// = 0).
func (c *Conn) SharedSubsUnavailable() bool { return c.noSharedSubs }
