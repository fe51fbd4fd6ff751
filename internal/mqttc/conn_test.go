package mqttc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/wait"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
)

// pipeConn returns a Conn on one end of an in-memory pipe and the other
// end, playing the broker. Its reader is not started: a test starts it
// (go c.readLoop()) when it wants the connection to read.
func pipeConn(t *testing.T, h Handlers) (*Conn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	// Every read and write of the test's broker end fails after
	// wait.Timeout instead of blocking forever when the client does not do
	// its part.
	_ = b.SetDeadline(time.Now().Add(wait.Timeout))
	epoch := time.Now()
	c := newConn(a, Version5, func() int64 { return int64(time.Since(epoch)) }, h)
	c.initWindow(4)
	return c, b
}

// waitClosed waits, at most wait.Timeout, for a connection's done channel.
func waitClosed(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(wait.Timeout):
		t.Fatalf("timed out after %v waiting for %s", wait.Timeout, what)
	}
}

// TestPublishEncodingMatchesPaho checks every PUBLISH mqplan writes against
// paho.golang's decoder, the reference codec.
func TestPublishEncodingMatchesPaho(t *testing.T) {
	tests := []struct {
		name    string
		topic   string
		qos     byte
		retain  bool
		payload []byte
	}{
		{"qos0 small", "a/b", 0, false, []byte("0123456789abcdef")},
		{"qos1 retained", "bench/1", 1, true, bytes.Repeat([]byte{7}, 1000)},
		{"qos2 long topic", strings.Repeat("t/", 200) + "x", 2, false, bytes.Repeat([]byte{1, 2, 3}, 100)},
		{"payload past 127 and 16383 bytes (multi-byte length)", "big", 1, false, bytes.Repeat([]byte{9}, 20000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, broker := pipeConn(t, Handlers{})
			errc := make(chan error, 1)
			go func() {
				errc <- c.Publish(context.Background(), tt.topic, tt.qos, tt.retain, tt.payload, 0)
			}()
			cp, err := packets.ReadPacket(broker)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			p, ok := cp.Content.(*packets.Publish)
			if !ok {
				t.Fatalf("decoded %T", cp.Content)
			}
			if p.Topic != tt.topic || p.QoS != tt.qos || p.Retain != tt.retain || !bytes.Equal(p.Payload, tt.payload) {
				t.Errorf("decoded topic %q qos %d retain %v payload %d bytes", p.Topic, p.QoS, p.Retain, len(p.Payload))
			}
			if (tt.qos > 0) != (p.PacketID != 0) {
				t.Errorf("packet id %d for qos %d", p.PacketID, tt.qos)
			}
			if tt.qos > 0 && c.pending.Load() != 1 {
				t.Errorf("pending = %d", c.pending.Load())
			}
		})
	}
}

// TestReaderHandlesPahoPackets feeds packets encoded by paho.golang (with
// properties mqplan itself never sends) and checks what the reader does.
func TestReaderHandlesPahoPackets(t *testing.T) {
	var got [][]byte
	var acks []bool
	c, broker := pipeConn(t, Handlers{
		Deliver: func(p []byte, _ bool) { got = append(got, bytes.Clone(p)) },
		Acked:   func(a Ack) { acks = append(acks, a.Reason.Failed()) },
	})
	// Two QoS 1/2 publishes of ours in flight, so that the acks below match.
	go func() {
		_ = c.Publish(context.Background(), "x", 1, false, []byte("one"), 0)
		_ = c.Publish(context.Background(), "x", 2, false, []byte("two"), 0)
	}()
	var ids []uint16
	for range 2 {
		cp, err := packets.ReadPacket(broker)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cp.Content.(*packets.Publish).PacketID)
	}
	go c.readLoop()
	expiry := uint32(60)
	send := func(cp *packets.ControlPacket) {
		t.Helper()
		if _, err := cp.WriteTo(broker); err != nil {
			t.Fatal(err)
		}
	}
	pub := func(qos byte, id uint16, payload string) *packets.ControlPacket {
		cp := packets.NewControlPacket(packets.PUBLISH)
		p := cp.Content.(*packets.Publish)
		p.Topic, p.QoS, p.PacketID, p.Payload = "in/topic", qos, id, []byte(payload)
		p.Properties = &packets.Properties{MessageExpiry: &expiry, ContentType: "text/plain", User: []packets.User{{Key: "k", Value: "v"}}}
		return cp
	}
	expect := func(typ byte, id uint16) {
		t.Helper()
		cp, err := packets.ReadPacket(broker)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Type != typ || cp.PacketID() != id {
			t.Fatalf("got packet type %d id %d, want type %d id %d", cp.Type, cp.PacketID(), typ, id)
		}
	}
	send(pub(0, 0, "q0"))
	send(pub(1, 11, "q1"))
	expect(packets.PUBACK, 11)
	send(pub(2, 12, "q2"))
	expect(packets.PUBREC, 12)
	rel := packets.NewControlPacket(packets.PUBREL)
	rel.Content.(*packets.Pubrel).PacketID = 12
	send(rel)
	expect(packets.PUBCOMP, 12)
	// Acks for our own publishes: PUBACK, then PUBREC → PUBREL → PUBCOMP.
	pa := packets.NewControlPacket(packets.PUBACK)
	pa.Content.(*packets.Puback).PacketID = ids[0]
	send(pa)
	rec := packets.NewControlPacket(packets.PUBREC)
	rec.Content.(*packets.Pubrec).PacketID = ids[1]
	send(rec)
	expect(packets.PUBREL, ids[1])
	comp := packets.NewControlPacket(packets.PUBCOMP)
	comp.Content.(*packets.Pubcomp).PacketID = ids[1]
	send(comp)
	// A DISCONNECT ends the connection with its reason.
	dc := packets.NewControlPacket(packets.DISCONNECT)
	dc.Content.(*packets.Disconnect).ReasonCode = 0x8B
	send(dc)
	waitClosed(t, "the connection to end on DISCONNECT", c.done)
	if want := []string{"q0", "q1", "q2"}; len(got) != 3 || string(got[0]) != want[0] || string(got[1]) != want[1] || string(got[2]) != want[2] {
		t.Errorf("payloads %q, want %q", got, want)
	}
	if len(acks) != 2 || acks[0] || acks[1] {
		t.Errorf("acks %v, want two successes", acks)
	}
	if c.pending.Load() != 0 {
		t.Errorf("pending = %d", c.pending.Load())
	}
	if c.closeErr == nil || !strings.Contains(c.closeErr.Error(), "server shutting down") {
		t.Errorf("close error %v", c.closeErr)
	}
}

// TestWindowBlocksAndReleases checks that a full in-flight window makes
// publish wait (or give up with its context) until an ack frees a slot.
func TestWindowBlocksAndReleases(t *testing.T) {
	c, broker := pipeConn(t, Handlers{})
	go func() {
		for {
			if _, err := packets.ReadPacket(broker); err != nil {
				return
			}
		}
	}()
	for i := 0; i < 4; i++ {
		if err := c.Publish(context.Background(), "x", 1, false, []byte("p"), 0); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Publish(ctx, "x", 1, false, []byte("p"), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish on a full window: %v", err)
	}
	c.complete(subscribeID+1, 0, 1) // the first publish's id
	if err := c.Publish(context.Background(), "x", 1, false, []byte("p"), 0); err != nil {
		t.Fatalf("publish after an ack: %v", err)
	}
	if c.pending.Load() != 4 {
		t.Errorf("pending = %d", c.pending.Load())
	}
	c.complete(subscribeID+1, 0, 1) // a repeated ack is ignored
	c.complete(999, 0, 1)
	if c.pending.Load() != 3 {
		t.Errorf("pending = %d after one more ack", c.pending.Load())
	}
}

// TestAdoptAndResend: the QoS 1/2 publishes a dropped connection left
// unacknowledged move to the new connection under the same packet ids, in
// the order they were first sent, and go out again (PUBLISH with DUP, or
// PUBREL after a PUBREC); their acks on the new connection complete them.
func TestAdoptAndResend(t *testing.T) {
	old, oldBroker := pipeConn(t, Handlers{})
	go func() {
		for _, seq := range []byte{1, 2, 3} {
			qos := byte(1)
			if seq == 2 {
				qos = 2
			}
			_ = old.Publish(context.Background(), "x", qos, false, []byte{seq}, token(seq))
		}
	}()
	var ids []uint16
	for range 3 {
		cp, err := packets.ReadPacket(oldBroker)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cp.Content.(*packets.Publish).PacketID)
	}
	// The broker acknowledges the first, sends PUBREC for the second (a
	// QoS 2 message) and nothing for the third; then the connection drops.
	go old.readLoop()
	go func() { // the PUBREL old writes for the PUBREC
		_, _ = packets.ReadPacket(oldBroker)
	}()
	if _, err := oldBroker.Write([]byte{TypePuback << 4, 2, byte(ids[0] >> 8), byte(ids[0]), TypePubrec << 4, 2, byte(ids[1] >> 8), byte(ids[1])}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the PUBACK and PUBREC to be handled", func() bool {
		old.idMu.Lock()
		defer old.idMu.Unlock()
		return old.pending.Load() == 2 && old.inflight[ids[1]].released
	})
	oldBroker.Close()
	waitClosed(t, "the old connection to end", old.done)

	var acked []Token
	ackedCh := make(chan struct{}, 2)
	c, broker := pipeConn(t, Handlers{Acked: func(a Ack) {
		acked = append(acked, a.Token)
		ackedCh <- struct{}{}
	}})
	got, dropped := c.Adopt(old)
	if dropped != 0 || len(got) != 2 || got[0] != ids[1] || got[1] != ids[2] || c.pending.Load() != 2 {
		t.Fatalf("adopted %v (dropped %d, pending %d), want %v", got, dropped, c.pending.Load(), ids[1:])
	}
	go func() {
		for _, id := range got {
			_ = c.Resend(id, "x", false, []byte{seqOf(c.Token(id))})
		}
	}()
	cp, err := packets.ReadPacket(broker)
	if err != nil {
		t.Fatal(err)
	}
	if rel, ok := cp.Content.(*packets.Pubrel); !ok || rel.PacketID != ids[1] {
		t.Fatalf("first resend %v, want PUBREL %d", cp, ids[1])
	}
	cp, err = packets.ReadPacket(broker)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := cp.Content.(*packets.Publish)
	if !ok || pub.PacketID != ids[2] || !pub.Duplicate || pub.QoS != 1 || string(pub.Payload) != "\x03" {
		t.Fatalf("second resend %+v, want PUBLISH %d with DUP, QoS 1, payload 3", cp.Content, ids[2])
	}
	// A new publish must not take an adopted id.
	go func() { _ = c.Publish(context.Background(), "x", 1, false, []byte{4}, token(4)) }()
	cp, err = packets.ReadPacket(broker)
	if err != nil {
		t.Fatal(err)
	}
	if id := cp.Content.(*packets.Publish).PacketID; id == ids[1] || id == ids[2] || id == subscribeID {
		t.Fatalf("new publish took id %d, in use", id)
	}
	go c.readLoop()
	if _, err := broker.Write([]byte{TypePubcomp << 4, 2, byte(ids[1] >> 8), byte(ids[1]), TypePuback << 4, 2, byte(ids[2] >> 8), byte(ids[2])}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case <-ackedCh:
		case <-time.After(wait.Timeout):
			t.Fatalf("%d of the 2 adopted publishes acknowledged after %v", i, wait.Timeout)
		}
	}
	if len(acked) != 2 || acked[0] != token(2) || acked[1] != token(3) || c.pending.Load() != 1 {
		t.Fatalf("acked tokens %x, want %x and %x; pending %d", acked, token(2), token(3), c.pending.Load())
	}
	if old.pending.Load() != 2 {
		t.Errorf("old connection's pending changed to %d", old.pending.Load())
	}
}

// token is the test's token for message seq: the high bits show that the
// whole 64 bits travel with the message, not just a sequence number.
func token(seq byte) Token { return Token(seq)<<40 | 0xfeed }

// seqOf is the inverse of token.
func seqOf(t Token) byte { return byte(t >> 40) }

// FuzzReader feeds arbitrary bytes to the reader: it may close the
// connection with an error, but never panics or hangs.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0x30, 0x05, 0x00, 0x01, 'a', 0x00, 'x'})
	f.Add([]byte{0x32, 0x06, 0x00, 0x01, 'a', 0x00, 0x01, 0x00})
	f.Add([]byte{0x40, 0x02, 0x00, 0x01, 0x90, 0x03, 0x00, 0x01, 0x00})
	f.Add([]byte{0xe0, 0x01, 0x8b})
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := net.Pipe()
		defer a.Close()
		c := newConn(a, Version5, func() int64 { return 0 }, Handlers{Deliver: func([]byte, bool) {}})
		c.br = bufio.NewReaderSize(bytes.NewReader(data), readBufferSize)
		c.initWindow(4)
		go func() { // the peer: swallow whatever the reader writes
			buf := make([]byte, 1024)
			for {
				if _, err := b.Read(buf); err != nil {
					return
				}
			}
		}()
		c.readLoop()
		b.Close()
		select {
		case <-c.done:
		default:
			t.Fatal("reader returned without closing")
		}
	})
}

// TestReasonName pins how reason codes read in errors: name and number.
func TestReasonName(t *testing.T) {
	for _, tc := range []struct {
		code ReasonCode
		want string
	}{
		{0x95, "packet too large (0x95)"},
		{0x9E, "shared subscriptions not supported (0x9E)"},
		{0x8E, "session taken over (0x8E)"},
		{0x86, "bad user name or password (0x86)"},
		{0xFE, "reason code 0xFE"},
	} {
		if got := tc.code.String(); got != tc.want {
			t.Errorf("ReasonCode(0x%02X).String() = %q, want %q", byte(tc.code), got, tc.want)
		}
	}
}

// TestSubscribeEncodesOptions checks the MQTT 5 SUBSCRIBE on the wire
// carries each filter's options, and that MQTT 3.1.1 sends none.
func TestSubscribeEncodesOptions(t *testing.T) {
	subs := []Subscription{
		{Filter: "a/#", QoS: 1, NoLocal: true, RetainAsPublished: true, RetainHandling: 2},
		{Filter: "b/+", QoS: 2, RetainHandling: 1},
		{Filter: "c", QoS: 0},
	}
	// What paho.golang, the reference codec, must decode from the MQTT 5
	// SUBSCRIBE.
	want := []packets.SubOptions{
		{Topic: "a/#", QoS: 1, NoLocal: true, RetainAsPublished: true, RetainHandling: 2},
		{Topic: "b/+", QoS: 2, RetainHandling: 1},
		{Topic: "c", QoS: 0},
	}
	for _, version := range []byte{5, 4} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			c, broker := pipeConn(t, Handlers{})
			c.version = version
			go func() { _, _ = c.Subscribe(context.Background(), subs) }()
			if version < 5 {
				// id, then per filter: length, topic, one QoS byte.
				wire := []byte{0x82, 0, 0, 1, 0, 3, 'a', '/', '#', 1, 0, 3, 'b', '/', '+', 2, 0, 1, 'c', 0}
				wire[1] = byte(len(wire) - 2)
				got := make([]byte, len(wire))
				if _, err := io.ReadFull(broker, got); err != nil {
					t.Fatal(err)
				}
				if string(got) != string(wire) {
					t.Fatalf("SUBSCRIBE %x, want %x", got, wire)
				}
				return
			}
			cp, err := packets.ReadPacket(broker)
			if err != nil {
				t.Fatal(err)
			}
			got := cp.Content.(*packets.Subscribe).Subscriptions
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("subscriptions %+v, want %+v", got, want)
			}
		})
	}
}

// TestEndOfConnection: Disconnect writes DISCONNECT and ends the
// connection on purpose (Closed gets nil, Err ErrClosed); a broker that
// hangs up ends it with the cause; either way the reader returns and
// closes ReaderDone, which a reconnect waits for.
func TestEndOfConnection(t *testing.T) {
	tests := []struct {
		name    string
		end     func(c *Conn, broker net.Conn)
		wantNil bool
	}{
		{"disconnect", func(c *Conn, broker net.Conn) {
			go c.Disconnect()
			b := make([]byte, 2)
			if _, err := io.ReadFull(broker, b); err != nil || b[0] != TypeDisconnect<<4 || b[1] != 0 {
				t.Errorf("read %x (%v), want DISCONNECT", b, err)
			}
		}, true},
		{"broker hangs up", func(_ *Conn, broker net.Conn) { broker.Close() }, false},
		{"close", func(c *Conn, _ net.Conn) { c.Close() }, true},
		// The raw read loop (TCP) reads on while data keeps coming:
		// closing must still end it.
		{"close while the broker streams", func(c *Conn, broker net.Conn) {
			var pk []byte
			for range 64 {
				pk = appendPublish(pk, Version5, "s", 0, false, false, 0, make([]byte, 1000))
			}
			go func() {
				for {
					if _, err := broker.Write(pk); err != nil {
						return
					}
				}
			}()
			c.Close()
		}, true},
	}
	// net.Pipe runs readLoop, loopback TCP the raw read loop (rawread.go).
	transports := []struct {
		name string
		pair func(t *testing.T) (net.Conn, net.Conn)
	}{
		{"pipe", func(*testing.T) (net.Conn, net.Conn) { return net.Pipe() }},
		{"tcp", func(t *testing.T) (net.Conn, net.Conn) { return loopback.Pair(t, wait.Timeout) }},
	}
	for _, tr := range transports {
		for _, tt := range tests {
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				testEnd(t, tr.pair, tt.end, tt.wantNil)
			})
		}
	}
}

// testEnd ends a connection made over pair as end does and checks how it
// ended.
func testEnd(t *testing.T, pair func(t *testing.T) (net.Conn, net.Conn), end func(c *Conn, broker net.Conn), wantNil bool) {
	a, broker := pair(t)
	t.Cleanup(func() { a.Close(); broker.Close() })
	_ = broker.SetDeadline(time.Now().Add(wait.Timeout))
	closed := make(chan error, 1)
	c := NewConn(a, Version5, func() int64 { return 0 }, Handlers{Closed: func(err error) { closed <- err }, Deliver: func([]byte, bool) {}})
	end(c, broker)
	select {
	case <-c.ReaderDone():
	case <-time.After(wait.Timeout):
		t.Fatalf("reader still running %v after the end", wait.Timeout)
	}
	<-c.Done()
	err := <-closed
	if (err == nil) != wantNil {
		t.Errorf("Closed got %v, want nil: %v", err, wantNil)
	}
	if wantNil && !errors.Is(c.Err(), ErrClosed) || !wantNil && c.Err() != err {
		t.Errorf("Err() = %v with Closed(%v)", c.Err(), err)
	}
	if err := c.Publish(context.Background(), "x", 1, false, nil, 1); err == nil {
		t.Error("publish on an ended connection succeeded")
	}
}

// TestTryPublish: TryPublishProps sends like PublishProps while the
// window has a free slot, sends nothing and returns ErrWindowFull at once
// when it is full (nothing written, nothing recorded), sends again once an
// ack frees a slot, and frees the slot of a write that failed.
func TestTryPublish(t *testing.T) {
	c, broker := pipeConn(t, Handlers{})
	got := make(chan uint16, 16)
	go func() {
		for {
			cp, err := packets.ReadPacket(broker)
			if err != nil {
				close(got)
				return
			}
			got <- cp.Content.(*packets.Publish).PacketID
		}
	}()
	for i := 0; i < 4; i++ {
		if err := c.TryPublishProps("x", 1, false, nil, []byte("p"), token(byte(i))); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if id := <-got; id != uint16(subscribeID+1+i) {
			t.Fatalf("publish %d went as packet id %d", i, id)
		}
	}
	if err := c.TryPublishProps("x", 1, false, nil, []byte("p"), token(4)); !errors.Is(err, ErrWindowFull) {
		t.Fatalf("publish on a full window: %v, want ErrWindowFull", err)
	}
	if n := c.Pending(); n != 4 {
		t.Errorf("pending = %d after a refused publish, want 4", n)
	}
	c.complete(subscribeID+1, 0, 1)
	if err := c.TryPublishProps("x", 1, false, nil, []byte("p"), token(5)); err != nil {
		t.Fatalf("publish after an ack: %v", err)
	}
	if id := <-got; id != subscribeID+1 {
		t.Errorf("the publish after the ack went as packet id %d, want the freed %d", id, subscribeID+1)
	}
	select {
	case id := <-got:
		t.Fatalf("the refused publish was written (packet id %d)", id)
	default:
	}
	// A write that fails gives its slot back: nothing is in flight.
	c.complete(subscribeID+2, 0, 1)
	broker.Close()
	if err := c.TryPublishProps("x", 1, false, nil, []byte("p"), token(6)); err == nil || errors.Is(err, ErrWindowFull) {
		t.Fatalf("publish to a closed peer: %v, want a write error", err)
	}
	if n := c.Pending(); n != 3 {
		t.Errorf("pending = %d after a failed write, want 3", n)
	}
	if err := c.TryPublishProps("x", 0, false, nil, []byte("p"), 0); err == nil {
		t.Error("QoS 0 publish to a closed peer: no error")
	}
}
