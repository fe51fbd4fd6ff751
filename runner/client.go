package runner

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"
	"github.com/eclipse/paho.golang/paho/session/state"
	"github.com/mqplan/mqplan/plans"
)

// receiveMaximum is sent in every CONNECT. Without it paho.golang sizes a
// 65,535-slot channel per client (~517 KiB); 64 keeps an idle client near
// 5 KiB of heap while leaving plenty of QoS 1/2 pipelining on loopback.
const receiveMaximum = 64

// readBufferSize is the per-connection read buffer. paho.golang reads a
// packet a few bytes at a time; a small buffer turns ~3 read syscalls per
// message into a fraction of one without costing much per idle connection.
const readBufferSize = 2048

// conn adapts a net.Conn for paho.golang: buffered reads, and writes that
// leave as one syscall per packet. paho's ControlPacket.WriteTo locks a
// conn that implements sync.Locker around the several Write calls of one
// packet (every paho write goes through it), so Write appends to a buffer
// and Unlock flushes it: packets from the publisher goroutine and paho's
// own acks never interleave, and each costs a single write.
type conn struct {
	net.Conn
	r    *bufio.Reader
	mu   sync.Mutex
	wbuf []byte
	werr error
}

func newConn(c net.Conn) *conn {
	return &conn{Conn: c, r: bufio.NewReaderSize(c, readBufferSize)}
}

// Read reads through the buffer.
func (c *conn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Lock starts a packet.
func (c *conn) Lock() { c.mu.Lock() }

// Unlock sends the packet written since Lock.
func (c *conn) Unlock() {
	if len(c.wbuf) > 0 && c.werr == nil {
		_, c.werr = c.Conn.Write(c.wbuf)
	}
	c.wbuf = c.wbuf[:0]
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil // do not keep a large payload's buffer on an idle client
	}
	c.mu.Unlock()
}

// Write buffers p; it must be called between Lock and Unlock, which
// paho.golang's ControlPacket.WriteTo guarantees. A previous failed write
// is reported so that callers see a dead connection.
func (c *conn) Write(p []byte) (int, error) {
	if c.werr != nil {
		return 0, c.werr
	}
	c.wbuf = append(c.wbuf, p...)
	return len(p), nil
}

// inflightMsg is one QoS 1/2 PUBLISH awaiting its PUBACK/PUBCOMP.
type inflightMsg struct {
	sent  int64 // ns since the run's epoch
	phase int
}

// ackSession wraps paho's in-memory session state to time acknowledgements:
// AddToSession sees the packet id assigned to each PUBLISH (before it is
// written) and PacketReceived sees the PUBACK/PUBCOMP that ends it. This
// keeps publishing asynchronous (open loop) while still measuring
// publish→ack latency per message.
type ackSession struct {
	*state.State
	now   func() int64
	onAck func(m inflightMsg, latency time.Duration, failed bool)
	// nextPhase is the phase of the PUBLISH being added; set by the
	// publisher goroutine right before it publishes.
	nextPhase int

	mu       sync.Mutex
	inflight map[uint16]inflightMsg
}

func newAckSession(now func() int64, onAck func(inflightMsg, time.Duration, bool)) *ackSession {
	return &ackSession{State: state.NewInMemory(), now: now, onAck: onAck, inflight: map[uint16]inflightMsg{}}
}

// AddToSession records the send time of each PUBLISH under its packet id.
func (s *ackSession) AddToSession(ctx context.Context, p session.Packet, resp chan<- packets.ControlPacket) error {
	err := s.State.AddToSession(ctx, p, resp)
	if err == nil {
		if pb, ok := p.(*packets.Publish); ok {
			s.mu.Lock()
			s.inflight[pb.PacketID] = inflightMsg{sent: s.now(), phase: s.nextPhase}
			s.mu.Unlock()
		}
	}
	return err
}

// PacketReceived times PUBACK, PUBCOMP and refused PUBREC before paho
// processes them.
func (s *ackSession) PacketReceived(recv *packets.ControlPacket, pubChan chan<- *packets.Publish) error {
	switch p := recv.Content.(type) {
	case *packets.Puback:
		s.acked(p.PacketID, p.ReasonCode >= 0x80)
	case *packets.Pubcomp:
		s.acked(p.PacketID, p.ReasonCode >= 0x80)
	case *packets.Pubrec:
		if p.ReasonCode >= 0x80 {
			s.acked(p.PacketID, true)
		}
	}
	return s.State.PacketReceived(recv, pubChan)
}

func (s *ackSession) acked(id uint16, failed bool) {
	s.mu.Lock()
	m, ok := s.inflight[id]
	if ok {
		delete(s.inflight, id)
	}
	s.mu.Unlock()
	if ok {
		s.onAck(m, time.Duration(s.now()-m.sent), failed)
	}
}

// ConnectionLost forgets unacknowledged publishes: they will never be
// acked on this connection, and their loss is counted by delivery accounting.
func (s *ackSession) ConnectionLost(dp *packets.Disconnect) error {
	s.mu.Lock()
	clear(s.inflight)
	s.mu.Unlock()
	return s.State.ConnectionLost(dp)
}

// client is one running MQTT client.
type client struct {
	plan  *plans.Client
	pc    *paho.Client
	conn  *conn
	sess  *ackSession
	ready atomic.Bool // connected and not yet lost
	// closing is set before mqplan disconnects on purpose, so that the
	// resulting connection close is not counted as a disconnect.
	closing atomic.Bool
	lost    atomic.Bool
	done    <-chan struct{}
	// wake is signalled by the pacer when a message of this publisher
	// falls due (capacity 1: signals never block the pacer).
	wake chan struct{}

	// Receive-side state, touched only by paho's single handler goroutine
	// for this client (or under share.mu for a share group).
	streams    map[uint32]*stream
	share      *shareState
	lastPub    uint32
	lastStream *stream
	recv       recvRecord
}

// shareState is the delivery state of one $share group: the same
// (publisher, sequence) delivered to two members is a duplicate.
type shareState struct {
	mu      sync.Mutex
	streams map[uint32]*stream
}

// streamFor returns the stream state for publisher pub; it allocates only
// the first time a stream is seen.
func streamFor(m map[uint32]*stream, pub uint32) *stream {
	s := m[pub]
	if s == nil {
		s = &stream{}
		m[pub] = s
	}
	return s
}
