package runner

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/mqplan/mqplan/internal/loopback"
	"github.com/mqplan/mqplan/internal/wait"
	"net"
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// hotRun is a run of one publisher and one subscriber, wired enough to
// drive the publish and receive paths without a broker.
func hotRun(tb testing.TB, size int) (*run, *client, []byte) {
	tb.Helper()
	p := &plans.Plan{
		File: "hot.yaml", Name: "hot",
		Broker: plans.Broker{URLs: []string{plans.Embedded}, Protocol: 5},
		Groups: []plans.Group{
			{Name: "sub", Count: 1, Start: 1, Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("t/1"), QoS: 1}}},
			{Name: "pub", Count: 1, Start: 1, Publish: &plans.Publish{Topic: plans.MustTemplate("t/%i"), QoS: 1, Size: size, Every: time.Millisecond}},
		},
		Duration: time.Hour,
	}
	prog, err := plans.Compile(p, plans.CompileOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	r := &run{prog: prog, rec: newRecorder(len(prog.Groups), prog.Drain), pattern: padPattern(prog.MaxPayload), epoch: time.Now()}
	// The live view's per-second ack histograms are recorded on the ack
	// path too (Options.Ack): measured with them.
	r.rec.trackAck = true
	sub := &client{plan: &prog.Clients[0], streams: map[uint32]*stream{}}
	return r, sub, make([]byte, size)
}

// hotTransports are the connections the hot paths are measured on: an
// in-memory pipe, and loopback TCP (the socket a run really writes to).
var hotTransports = []struct {
	name string
	pair func(tb testing.TB) (client, broker net.Conn)
}{
	{"net.Pipe", func(tb testing.TB) (net.Conn, net.Conn) {
		a, b := net.Pipe()
		tb.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}},
	{"loopback TCP", func(tb testing.TB) (net.Conn, net.Conn) { return loopback.Pair(tb, wait.Timeout) }},
}

// hotConn is mqplan's real connection (mqttc.Conn, its reader goroutine
// running) on the client end of a transport, with handlers that do what
// the run's do (record the ack in its message's phase, hand the payload
// to run.receive) and then signal the test. The broker end is returned
// for the test to play.
func hotConn(tb testing.TB, nc net.Conn, r *run, sub *client) (c *mqttc.Conn, acked, received chan struct{}) {
	tb.Helper()
	acked, received = make(chan struct{}, 1), make(chan struct{}, 1)
	pub := &r.prog.Clients[1]
	c = mqttc.NewConn(nc, mqttc.Version5, r.now, mqttc.Handlers{
		Acked: func(a mqttc.Ack) {
			ph, _ := r.sentAs(pub.Publish, a.Token)
			r.rec.recordAck(pub.Index, ph, pub.Group, a.Latency, a.Reason.Failed())
			acked <- struct{}{}
		},
		Deliver: func(payload []byte, retained bool) {
			r.receive(sub, payload, retained)
			received <- struct{}{}
		},
	})
	tb.Cleanup(c.Close)
	return c, acked, received
}

// fakeBroker reads what mqplan writes on its end of the connection and
// acknowledges it as a broker would: PUBACK for a QoS 1 PUBLISH, PUBREC for
// QoS 2, PUBCOMP for a PUBREL; other packets (mqplan's own PUBACKs of
// deliveries, in the receive test) are handed to acks. It allocates nothing
// per packet, so that AllocsPerRun counts mqplan's allocations only.
func fakeBroker(nc net.Conn, acks chan<- [4]byte) {
	br := bufio.NewReaderSize(nc, 64<<10)
	out := make([]byte, 4)
	for {
		b0, err := br.ReadByte()
		if err != nil {
			return
		}
		n, err := mqttc.ReadVBI(br)
		if err != nil {
			return
		}
		head, err := br.Peek(min(n, 4))
		if err != nil {
			return
		}
		var reply byte
		var id uint16
		switch typ, qos := b0>>4, (b0>>1)&3; {
		case typ == mqttc.TypePublish && qos > 0:
			tl := int(binary.BigEndian.Uint16(head))
			idb, err := br.Peek(2 + tl + 2)
			if err != nil {
				return
			}
			id = binary.BigEndian.Uint16(idb[2+tl:])
			reply = mqttc.TypePuback << 4
			if qos == 2 {
				reply = mqttc.TypePubrec << 4
			}
		case typ == mqttc.TypePubrel:
			id, reply = binary.BigEndian.Uint16(head), mqttc.TypePubcomp<<4
		case typ != mqttc.TypePublish && len(head) == 2:
			acks <- [4]byte{b0, byte(n), head[0], head[1]}
		}
		if _, err := br.Discard(n); err != nil {
			return
		}
		if reply != 0 {
			out[0], out[1], out[2], out[3] = reply, 2, byte(id>>8), byte(id)
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
	}
}

// TestHotPathsDoNotAllocate measures, per message, mqplan's real publish
// path (mqttc.Conn.Publish writing to a socket, the reader
// goroutine handling the PUBACK or PUBREC/PUBREL/PUBCOMP, the ack
// recorded) and its real receive path (the reader goroutine reading a
// PUBLISH off the socket, run.receive decoding, checking and recording it,
// the PUBACK or PUBREC/PUBCOMP written back), each over an in-memory pipe
// and over loopback TCP, at every QoS, with a payload that fits the read
// buffer (read in place) and one that does not (copied out): none may
// allocate. AllocsPerRun counts the allocations of every goroutine, so the
// fake broker on the other end allocates nothing per packet itself.
func TestHotPathsDoNotAllocate(t *testing.T) {
	for _, tr := range hotTransports {
		for _, size := range []int{1000, 20000} {
			for _, qos := range []byte{0, 1, 2} {
				t.Run(fmt.Sprintf("%s/%dB/qos%d", tr.name, size, qos), func(t *testing.T) {
					// The publisher goroutine's send (waiting for an
					// in-flight slot) and the pacer's (pacer_send.go).
					for _, try := range []bool{false, true} {
						name := "publish"
						if try {
							name = "pacer publish"
						}
						t.Run(name, func(t *testing.T) {
							r, sub, _ := hotRun(t, size)
							cn, bn := tr.pair(t)
							_ = bn.SetDeadline(time.Now().Add(wait.Timeout))
							c, acked, _ := hotConn(t, cn, r, sub)
							go fakeBroker(bn, make(chan [4]byte, 1))
							pub := &client{plan: &r.prog.Clients[1]}
							pub.plan.Publish.QoS = qos
							pub.live.Store(c)
							pub.ready.Store(true)
							pub.ps = r.newPubState(pub)
							ctx := context.Background()
							k := 0
							var failed error
							// One deadline for every wait of the run: a timer
							// made per wait (time.After) would allocate.
							deadline := time.NewTimer(wait.Timeout)
							defer deadline.Stop()
							// One message as run.publish or the pacer sends
							// it, intended now.
							step := func() {
								if failed != nil {
									return
								}
								out := r.send(ctx, pub, pub.ps, k, time.Duration(r.now()), try)
								if out == sendStalled {
									// The pacer's write found the socket
									// full (pacer_send.go): the goroutine
									// writes the tail, as run.publish does.
									if err := c.Flush(); err != nil {
										failed = fmt.Errorf("message %d: flush: %v", k, err)
										return
									}
									out = sendDone
								}
								if out != sendDone {
									failed = fmt.Errorf("message %d: outcome %d, errors %v", k, out, r.errKinds)
									return
								}
								k++
								if qos > 0 {
									select {
									case <-acked:
									case <-deadline.C:
										failed = fmt.Errorf("message %d not acknowledged within %v of the start", k, wait.Timeout)
									}
								}
							}
							n := testing.AllocsPerRun(1000, step)
							if failed != nil {
								t.Fatal(failed)
							}
							if n != 0 {
								t.Errorf("%s path: %v allocations per message", name, n)
							}
						})
					}
					t.Run("receive", func(t *testing.T) {
						r, sub, _ := hotRun(t, size)
						cn, bn := tr.pair(t)
						_ = bn.SetDeadline(time.Now().Add(wait.Timeout))
						_, _, received := hotConn(t, cn, r, sub)
						acks := make(chan [4]byte, 2)
						go fakeBroker(bn, acks)
						pub := &r.prog.Clients[1]
						// A PUBLISH as a broker writes it (MQTT 5, no
						// properties), the payload rewritten per message.
						const topic = "t/1"
						pkt := []byte{mqttc.TypePublish<<4 | qos<<mqttc.PublishQoSShift}
						rl := 2 + len(topic) + 1 + size
						if qos > 0 {
							rl += 2
						}
						pkt = mqttc.AppendVBI(pkt, rl)
						pkt = mqttc.AppendString(pkt, topic)
						idAt := len(pkt)
						if qos > 0 {
							pkt = append(pkt, 0, 0)
						}
						pkt = append(pkt, 0)
						payload := len(pkt)
						pkt = append(pkt, make([]byte, size)...)
						pubrel := make([]byte, 4)
						seq := uint32(0)
						var failed error
						deadline := time.NewTimer(wait.Timeout) // see publish
						defer deadline.Stop()
						expectAck := func(typ byte, id uint16) {
							select {
							case a := <-acks:
								if (a[0]>>4 != typ || binary.BigEndian.Uint16(a[2:]) != id) && failed == nil {
									failed = fmt.Errorf("message %d: got packet %x, want type %d for id %d", seq, a, typ, id)
								}
							case <-deadline.C:
								failed = fmt.Errorf("message %d: no ack within %v of the start", seq, wait.Timeout)
							}
						}
						step := func() {
							if failed != nil {
								return
							}
							seq++
							id := uint16(seq%60000 + 1)
							binary.BigEndian.PutUint16(pkt[idAt:], id)
							encodePayload(pkt[payload:], r.pattern, uint32(pub.Index), seq, r.now())
							if _, err := bn.Write(pkt); err != nil && failed == nil {
								failed = err
								return
							}
							select {
							case <-received:
							case <-deadline.C:
								failed = fmt.Errorf("message %d not received within %v of the start", seq, wait.Timeout)
								return
							}
							switch qos {
							case 1:
								expectAck(mqttc.TypePuback, id)
							case 2:
								expectAck(mqttc.TypePubrec, id)
								pubrel[0], pubrel[1], pubrel[2], pubrel[3] = mqttc.TypePubrel<<4|mqttc.FlagsRequired, 2, byte(id>>8), byte(id)
								if _, err := bn.Write(pubrel); err != nil && failed == nil {
									failed = err
									return
								}
								expectAck(mqttc.TypePubcomp, id)
							}
						}
						n := testing.AllocsPerRun(1000, step)
						if failed != nil {
							t.Fatal(failed)
						}
						if n != 0 {
							t.Errorf("receive path: %v allocations per message", n)
						}
					})
				})
			}
		}
	}
	t.Run("topic expansion", func(t *testing.T) {
		var dst []byte
		tmpl := plans.MustTemplate("bench/%c/%u/%i")
		vars := plans.TemplateVars{ClientID: "client-1", Username: "user", N: 42}
		if n := testing.AllocsPerRun(1000, func() { dst = tmpl.AppendExpand(dst[:0], vars) }); n != 0 {
			t.Errorf("topic expansion: %v allocations", n)
		}
	})
}

// BenchmarkPublishPath is one QoS 1 message through mqttc.Conn.Publish over
// loopback TCP to a broker that acknowledges it, as in the test above.
func BenchmarkPublishPath(b *testing.B) {
	r, sub, buf := hotRun(b, 1000)
	cn, bn := hotTransports[1].pair(b)
	c, acked, _ := hotConn(b, cn, r, sub)
	go fakeBroker(bn, make(chan [4]byte, 1))
	pub := &r.prog.Clients[1]
	rec := sendRecord{group: pub.Group, bytes: 1000, expected: 1, expectedBy: pub.Publish.ExpectedByGroup}
	b.ReportAllocs()
	b.SetBytes(1000)
	k := uint32(0)
	for b.Loop() {
		k++
		encodePayload(buf, r.pattern, uint32(pub.Index), k, r.now())
		if err := c.Publish(context.Background(), "t/1", 1, false, buf, mqttc.Token(k)); err != nil {
			b.Fatal(err)
		}
		r.rec.recordSend(pub.Index, &rec)
		<-acked
	}
}

func BenchmarkReceivePath(b *testing.B) {
	r, sub, buf := hotRun(b, 1000)
	pub := &r.prog.Clients[1]
	payloads := make([][]byte, 1024)
	for i := range payloads {
		payloads[i] = make([]byte, len(buf))
	}
	b.ReportAllocs()
	b.SetBytes(1000)
	seq := uint32(0)
	for b.Loop() {
		// Prepared in batches so that the loop measures decoding, the
		// content check, the stream state and recording, not encoding.
		if seq%1024 == 0 {
			b.StopTimer()
			for i := range payloads {
				encodePayload(payloads[i], r.pattern, uint32(pub.Index), seq+uint32(i)+1, r.now())
			}
			b.StartTimer()
		}
		r.receive(sub, payloads[seq%1024], false)
		seq++
	}
}

func BenchmarkTopicExpand(b *testing.B) {
	tmpl := plans.MustTemplate("bench/%c/%u/%i")
	vars := plans.TemplateVars{ClientID: "client-1", Username: "user", N: 42}
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = tmpl.AppendExpand(dst[:0], vars)
	}
}
