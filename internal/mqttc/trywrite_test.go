package mqttc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/wait"
)

// TestTryPublishStalls: on a loopback TCP connection whose far end stops
// reading, TryPublishProps never blocks: once the socket buffers are full
// it returns ErrStalled with the packet's tail pending (and again for a
// packet queued behind that tail); when the far end reads again, the next
// writer (a blocking Publish) writes the tail first, and the far end reads
// exactly the packets written, whole and in order.
func TestTryPublishStalls(t *testing.T) {
	a, b := loopback.Pair(t, wait.Timeout)
	// Small buffers: the stall comes after a few hundred KB.
	_ = a.(*net.TCPConn).SetWriteBuffer(16 << 10)
	_ = b.(*net.TCPConn).SetReadBuffer(16 << 10)
	_ = b.SetDeadline(time.Now().Add(wait.Timeout))
	epoch := time.Now()
	c := newConn(a, Version5, func() int64 { return int64(time.Since(epoch)) }, Handlers{})
	c.initWindow(4)
	if !c.TryWrites() {
		t.Fatal("a plain TCP connection: TryWrites false")
	}
	payload := make([]byte, 3000)
	publish := func(seq int) error {
		binary.BigEndian.PutUint32(payload, uint32(seq))
		return c.TryPublishProps("t/s", 0, false, nil, payload, 0)
	}
	// Fill the buffers until a write stalls; each call must return (the
	// whole loop runs against a deadline).
	type result struct {
		sent int
		err  error
	}
	res := make(chan result, 1)
	go func() {
		for seq := 0; seq < 100_000; seq++ {
			err := publish(seq)
			if errors.Is(err, ErrStalled) {
				res <- result{seq + 1, nil}
				return
			}
			if err != nil {
				res <- result{seq, err}
				return
			}
		}
		res <- result{0, errors.New("no stall after 100000 packets")}
	}()
	var sent int
	select {
	case r := <-res:
		if r.err != nil {
			t.Fatal(r.err)
		}
		sent = r.sent
	case <-time.After(wait.Timeout):
		t.Fatalf("TryPublishProps blocked on a peer that stopped reading (no answer within %v)", wait.Timeout)
	}
	if n := c.PendingBytes(); n == 0 {
		t.Fatal("stalled with nothing pending")
	}
	// A packet behind the pending tail is queued, not blocked.
	before := c.PendingBytes()
	if err := publish(sent); !errors.Is(err, ErrStalled) {
		t.Fatalf("a publish behind a pending tail: %v, want ErrStalled", err)
	}
	sent++
	if n := c.PendingBytes(); n <= before {
		t.Fatalf("pending %d after queueing behind %d", n, before)
	}
	// The far end reads again: every packet, whole, in order.
	total := sent + 1 // and the blocking Publish's below
	got := make(chan error, 1)
	go func() {
		for i := 0; i < total; i++ {
			cp, err := packets.ReadPacket(b)
			if err != nil {
				got <- err
				return
			}
			p, ok := cp.Content.(*packets.Publish)
			if !ok || p.Topic != "t/s" || len(p.Payload) != len(payload) {
				got <- fmt.Errorf("packet %d: not the PUBLISH written", i)
				return
			}
			if seq := binary.BigEndian.Uint32(p.Payload); seq != uint32(i) {
				got <- fmt.Errorf("out of order: seq %d at %d", seq, i)
				return
			}
		}
		got <- nil
	}()
	binary.BigEndian.PutUint32(payload, uint32(sent))
	ctx, cancel := context.WithTimeout(context.Background(), wait.Timeout)
	defer cancel()
	if err := c.PublishProps(ctx, "t/s", 0, false, nil, payload, 0); err != nil {
		t.Fatalf("the next writer: %v", err)
	}
	if n := c.PendingBytes(); n != 0 {
		t.Errorf("pending %d after the next writer", n)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait.Timeout):
		t.Fatalf("the far end did not read %d packets within %v", total, wait.Timeout)
	}
	// Flush with nothing pending writes nothing.
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = b.SetReadDeadline(time.Now())
	if n, err := b.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("bytes after the last packet (%d, %v)", n, err)
	}
}

// TestTryPublishFlush: Flush writes a stalled packet's tail, blocking
// until the far end reads.
func TestTryPublishFlush(t *testing.T) {
	a, b := loopback.Pair(t, wait.Timeout)
	_ = a.(*net.TCPConn).SetWriteBuffer(16 << 10)
	_ = b.(*net.TCPConn).SetReadBuffer(16 << 10)
	_ = b.SetDeadline(time.Now().Add(wait.Timeout))
	epoch := time.Now()
	c := newConn(a, Version5, func() int64 { return int64(time.Since(epoch)) }, Handlers{})
	c.initWindow(4)
	payload := make([]byte, 3000)
	sent := 0
	deadline := time.Now().Add(wait.Timeout)
	for {
		binary.BigEndian.PutUint32(payload, uint32(sent))
		err := c.TryPublishProps("t/s", 0, false, nil, payload, 0)
		sent++
		if errors.Is(err, ErrStalled) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no stall")
		}
	}
	got := make(chan error, 1)
	go func() {
		for i := 0; i < sent; i++ {
			cp, err := packets.ReadPacket(b)
			if err != nil {
				got <- err
				return
			}
			if seq := binary.BigEndian.Uint32(cp.Content.(*packets.Publish).Payload); seq != uint32(i) {
				got <- fmt.Errorf("out of order at %d", i)
				return
			}
		}
		got <- nil
	}()
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
