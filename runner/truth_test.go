package runner

import (
	"bufio"
	"encoding/binary"
	"github.com/mqplan/mqplan/internal/wait"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mqplan/mqplan/internal/mqttc"
)

// msgKey names one measured message: its publisher and sequence number.
type msgKey struct{ pub, seq uint32 }

// keyOf reads a measured message's key from its payload. A clean
// subscriber's fence (clean_run.go) is not one.
func keyOf(payload []byte) (msgKey, bool) {
	if strings.HasPrefix(string(payload), fencePrefix) {
		return msgKey{}, false
	}
	h, ok := decodeHeader(payload)
	return msgKey{h.pub, h.seq}, ok && h.seq != 0
}

// deliveryTruth is a broker hook that records, per subscriber client id,
// which measured messages the broker wrote to it and which the subscriber
// acknowledged (QoS 1/2), and which it stranded at a session takeover (see
// stranded). It is the broker's side of the accounting that TestReconnect
// compares mqplan's loss with: a message the broker never wrote to a
// subscriber is lost for certain, one it wrote and saw acknowledged was
// certainly received, and one written but not acknowledged when the
// connection broke may have been either.
type deliveryTruth struct {
	mqtt.HookBase
	mu      sync.Mutex
	written map[string]map[msgKey]bool
	acked   map[string]map[msgKey]bool
	// ids maps a subscriber's packet ids to the message last written
	// under them, for OnQosComplete (which sees only the ack).
	ids map[string]map[uint16]msgKey
	// routedToOld are the messages mochi routed to a client object after
	// its session was taken over (isTakenOver set), by client id.
	routedToOld map[string]map[msgKey]bool
	// carried are the messages the new session's inflight store held when
	// it was established: those mochi cloned from the old client.
	carried map[string]map[msgKey]bool
}

func newDeliveryTruth() *deliveryTruth {
	return &deliveryTruth{
		written: map[string]map[msgKey]bool{}, acked: map[string]map[msgKey]bool{},
		ids: map[string]map[uint16]msgKey{}, routedToOld: map[string]map[msgKey]bool{},
		carried: map[string]map[msgKey]bool{},
	}
}

func (h *deliveryTruth) ID() string { return "test-delivery-truth" }

func (h *deliveryTruth) Provides(b byte) bool {
	switch b {
	case mqtt.OnPacketSent, mqtt.OnQosComplete, mqtt.OnQosPublish, mqtt.OnSessionEstablished:
		return true
	}
	return false
}

// add puts k in m[id], creating the set.
func add[V comparable](m map[string]map[V]bool, id string, k V) {
	if m[id] == nil {
		m[id] = map[V]bool{}
	}
	m[id][k] = true
}

// OnPacketSent records a PUBLISH written to a subscriber. A retained
// replay (Retain set: mochi clears it on live deliveries) is not the
// delivery the plan expects but a copy sent on subscribing, which mqplan
// counts as foreign: it is left out.
func (h *deliveryTruth) OnPacketSent(cl *mqtt.Client, pk packets.Packet, _ []byte) {
	if pk.FixedHeader.Type != packets.Publish || pk.FixedHeader.Retain {
		return
	}
	k, ok := keyOf(pk.Payload)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	add(h.written, cl.ID, k)
}

// OnQosComplete records the subscriber's PUBACK (or PUBCOMP).
func (h *deliveryTruth) OnQosComplete(cl *mqtt.Client, pk packets.Packet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k, ok := h.ids[cl.ID][pk.PacketID]; ok {
		add(h.acked, cl.ID, k)
	}
}

// OnQosPublish sees every QoS 1/2 delivery stored in a client's inflight
// store, under its packet id, before it is written (OnPacketSent runs after
// the write, when the PUBACK may already be in), including those routed to
// a client whose session is being taken over.
func (h *deliveryTruth) OnQosPublish(cl *mqtt.Client, pk packets.Packet, _ int64, _ int) {
	k, ok := keyOf(pk.Payload)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !ok {
		// Not a measured message (a clean session's fence): its ack must
		// not count for the message that used the id before it.
		delete(h.ids[cl.ID], pk.PacketID)
		return
	}
	if h.ids[cl.ID] == nil {
		h.ids[cl.ID] = map[uint16]msgKey{}
	}
	if pk.FixedHeader.Retain {
		// A retained replay (see OnPacketSent): its ack must not count
		// for whatever message used the id before.
		delete(h.ids[cl.ID], pk.PacketID)
		return
	}
	h.ids[cl.ID][pk.PacketID] = k
	if cl.IsTakenOver() {
		add(h.routedToOld, cl.ID, k)
	}
}

// OnSessionEstablished records what the new session inherited: it runs
// after the takeover and the resend of the inherited messages, before the
// client's acks are read, so they are all still in its inflight store.
func (h *deliveryTruth) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	for _, pk := range cl.State.Inflight.GetAll(false) {
		if k, ok := keyOf(pk.Payload); ok {
			h.mu.Lock()
			add(h.carried, cl.ID, k)
			h.mu.Unlock()
		}
	}
}

// stranded counts the messages mochi routed to a taken-over client object
// and did not carry to the new session: they are in an inflight store
// nobody reads again (see TestReconnect).
func (h *deliveryTruth) stranded() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := int64(0)
	for id, ks := range h.routedToOld {
		for k := range ks {
			if !h.carried[id][k] {
				n++
			}
		}
	}
	return n
}

// lostBounds returns, for the subscribers whose id contains match, the
// loss the broker's record allows given expected deliveries in all: at
// least those never written, at most those never acknowledged.
func (h *deliveryTruth) lostBounds(match string, expected int64) (min, max int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var written, acked int64
	for id, ks := range h.written {
		if strings.Contains(id, match) {
			written += int64(len(ks))
		}
	}
	for id, ks := range h.acked {
		if strings.Contains(id, match) {
			acked += int64(len(ks))
		}
	}
	return expected - written, expected - acked
}

// kickProxy is a TCP proxy in front of a broker that can cut the
// connections of chosen clients, as a network fault would: the broker is
// not at fault, it sees the connection drop. It reads each connection's
// client id from its CONNECT (MQTT 5 or 3.1.1).
type kickProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[string][]net.Conn // client id → both sides
}

func startKickProxy(t *testing.T, target string) *kickProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &kickProxy{ln: ln, target: target, conns: map[string][]net.Conn{}}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, cs := range p.conns {
			for _, c := range cs {
				c.Close()
			}
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

// URL is the proxy's mqtt:// URL.
func (p *kickProxy) URL() string { return "mqtt://" + p.ln.Addr().String() }

func (p *kickProxy) serve(c net.Conn) {
	br := bufio.NewReader(c)
	connect, id, err := readConnect(br)
	if err != nil {
		c.Close()
		return
	}
	u, err := net.DialTimeout("tcp", p.target, wait.Timeout)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[id] = append(p.conns[id], c, u)
	p.mu.Unlock()
	if _, err := u.Write(connect); err != nil {
		c.Close()
		u.Close()
		return
	}
	go func() { _, _ = io.Copy(c, u); c.Close() }()
	_, _ = io.Copy(u, br)
	u.Close()
}

// kick cuts every proxied connection whose client id contains match, and
// returns how many it cut.
func (p *kickProxy) kick(match string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for id, cs := range p.conns {
		if strings.Contains(id, match) {
			for _, c := range cs {
				c.Close()
			}
			delete(p.conns, id)
			n++
		}
	}
	return n
}

// readConnect reads a CONNECT packet whole and returns it and its client id.
func readConnect(br *bufio.Reader) ([]byte, string, error) {
	b0, err := br.ReadByte()
	if err != nil {
		return nil, "", err
	}
	n, err := mqttc.ReadVBI(br)
	if err != nil {
		return nil, "", err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, "", err
	}
	pkt := mqttc.AppendVBI([]byte{b0}, n)
	pkt = append(pkt, body...)
	if b0>>4 != mqttc.TypeConnect || len(body) < 2 {
		return nil, "", io.ErrUnexpectedEOF
	}
	i := 2 + int(binary.BigEndian.Uint16(body)) // protocol name
	if i+4 > len(body) {
		return nil, "", io.ErrUnexpectedEOF
	}
	level := body[i]
	i += 4 // level, flags, keepalive
	if level == 5 {
		plen, k, ok := mqttc.VBIAt(body, i)
		if !ok {
			return nil, "", io.ErrUnexpectedEOF
		}
		i += k + plen
	}
	if i+2 > len(body) {
		return nil, "", io.ErrUnexpectedEOF
	}
	l := int(binary.BigEndian.Uint16(body[i:]))
	if i+2+l > len(body) {
		return nil, "", io.ErrUnexpectedEOF
	}
	return pkt, string(body[i+2 : i+2+l]), nil
}
