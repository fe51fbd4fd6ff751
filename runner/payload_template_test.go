package runner

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/plans"
)

// flipHook flips one bit of one payload byte of the at-th PUBLISH the
// broker receives from a client whose id contains "-pub-", as a faulty
// broker or network would: the subscriber must count exactly that
// delivery as corrupted. offset < 0 counts from the payload's end.
type flipHook struct {
	mqtt.HookBase
	at, offset int
	mu         sync.Mutex
	seen       int
	flipped    bool
}

func (h *flipHook) ID() string           { return "test-flip" }
func (h *flipHook) Provides(b byte) bool { return b == mqtt.OnPublish }

func (h *flipHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if !strings.Contains(cl.ID, "-pub-") {
		return pk, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen++
	if h.seen != h.at || len(pk.Payload) == 0 {
		return pk, nil
	}
	p := append([]byte(nil), pk.Payload...)
	i := h.offset
	if i < 0 {
		i += len(p)
	}
	p[i] ^= 0x01
	pk.Payload = p
	h.flipped = true
	return pk, nil
}

// payloadPlan is a 1:1 QoS 1 plan of two publishers sending count
// messages each with the given publish: lines.
func payloadPlan(t *testing.T, publish string, count int) *plans.Program {
	t.Helper()
	return payloadPlanPaced(t, "every: 5ms", "", publish, count)
}

// payloadPlanPaced is payloadPlan with the publish pace given (every: 5ms,
// or rate: max for the closed loop) and top-level keys added (the closed
// loop needs a duration).
func payloadPlanPaced(t *testing.T, pace, top, publish string, count int) *plans.Program {
	t.Helper()
	src := `
seed: 42
groups:
  - name: sub
    count: 2
    subscribe: {topic: "pt/%i", qos: 1}
  - name: pub
    count: 2
    publish:
      topic: pt/%i
      qos: 1
      ` + pace + `
      count: ` + strconv.Itoa(count) + `
` + publish + `
` + top + `
drain: 1s
`
	p, err := plans.LoadBytes("payload.yaml", []byte(src), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return compile(t, p)
}

// TestTemplatedPayloadsCheckedByteForByte runs templated and sized
// payloads through the embedded broker, once intact and once with one bit
// of one message flipped (in the template's text, its header field, or a
// drawn-size binary payload's padding): every intact delivery is received,
// the altered one alone counts as corrupted, and the bytes sent are
// exactly the sum of the messages' sizes as the plan computes them.
func TestTemplatedPayloadsCheckedByteForByte(t *testing.T) {
	t.Parallel()
	const count = 12
	tests := []struct {
		name    string
		publish string
		offset  int // the flipped byte; counted from the end when < 0
	}{
		{name: "JSON template, header prefix", offset: -2,
			publish: `      payload: '{"id":"%c","n":%s,"t":%t,"v":%{float:-5:40:2},"s":"%{choice:ok|warn|fail}","x":"%{hex:12}"}'`},
		{name: "JSON template, header field", offset: 12,
			publish: `      payload: '{"h":"%h","id":"%c","temp":%{int:-20:45},"at":"%T"}'`},
		{name: "JSON template, header field, text flipped", offset: -3,
			publish: `      payload: '{"h":"%h","id":"%c","temp":%{int:-20:45},"at":"%T"}'`},
		{name: "JSON template, header property", offset: -5,
			publish: "      header: property\n      payload: '{\"device\":%i,\"seq\":%s,\"rpm\":%{int:0:9000}}'"},
		{name: "uniform size", offset: -1,
			publish: "      size: {min: 20B, max: 300B}"},
		{name: "weighted sizes", offset: -1,
			publish: "      size: [{size: 32B, weight: 3}, {size: 2KB, weight: 1}]"},
	}
	for _, tt := range tests {
		for _, flip := range []bool{false, true} {
			name := tt.name + "/intact"
			if flip {
				name = tt.name + "/one byte flipped"
			}
			t.Run(name, func(t *testing.T) {
				prog := payloadPlan(t, tt.publish, count)
				hook := &flipHook{at: -1, offset: tt.offset}
				if flip {
					hook.at = 5
				}
				st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{hook}}, Options{})
				m := all(st)
				want := int64(2 * count)
				wantCorrupt := int64(0)
				if flip {
					wantCorrupt = 1
					if !hook.flipped {
						t.Fatal("the hook flipped nothing")
					}
				}
				if st.Incomplete != "" || m.Sent != want || m.Corrupted != wantCorrupt || m.Received != want-wantCorrupt || m.Duplicates != 0 || m.Foreign != 0 {
					t.Fatalf("incomplete %q sent %d received %d corrupted %d dup %d foreign %d; want %d sent, %d corrupted, the rest received (errors %v)",
						st.Incomplete, m.Sent, m.Received, m.Corrupted, m.Duplicates, m.Foreign, want, wantCorrupt, st.ErrorSamples)
				}
				// The payload bytes sent are the messages' exact sizes: the
				// template's rendering (the intended time's digits are
				// fixed-width) or the drawn size.
				var bytes int64
				for i := range prog.Clients {
					pc := &prog.Clients[i]
					if pc.Publish == nil {
						continue
					}
					w := newPayloadWriter(pc.Publish)
					for seq := 1; seq <= count; seq++ {
						k := plans.PayloadKey{Seed: 42, Pub: uint32(pc.Index), Seq: uint32(seq), Intended: time.Now().UnixNano()}
						b, _ := w.fill(padPattern(prog.MaxPayload), pc, k)
						bytes += int64(len(b))
					}
				}
				if m.SentBytes != bytes {
					t.Errorf("sent bytes %d, want %d, the sum of the messages' sizes", m.SentBytes, bytes)
				}
			})
		}
	}
}

// TestClosedLoopRendersPayloads: a closed-loop publisher (rate: max)
// renders templates, drawn sizes and the header's place as the open loop
// does, so every delivery checks byte for byte, and one altered byte is
// one corrupted delivery.
func TestClosedLoopRendersPayloads(t *testing.T) {
	const count = 12
	tests := []struct {
		name, publish string
		flip          bool
	}{
		{name: "JSON template, header prefix", publish: `      payload: '{"id":"%c","n":%s,"t":%t,"v":%{float:-5:40:2}}'`},
		{name: "JSON template, header field", publish: `      payload: '{"h":"%h","id":"%c","temp":%{int:-20:45},"at":"%T"}'`},
		{name: "JSON template, header property", publish: "      header: property\n      payload: '{\"device\":%i,\"seq\":%s}'"},
		{name: "JSON template, header property, one byte flipped", flip: true, publish: "      header: property\n      payload: '{\"device\":%i,\"seq\":%s}'"},
		{name: "weighted sizes", publish: "      size: [{size: 32B, weight: 3}, {size: 2KB, weight: 1}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := payloadPlanPaced(t, "rate: max\n      inflight: 2", "duration: 5s", tt.publish, count)
			hook := &flipHook{at: -1, offset: -2}
			wantCorrupt := int64(0)
			if tt.flip {
				hook.at, wantCorrupt = 5, 1
			}
			st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{hook}}, Options{})
			m := all(st)
			want := int64(2 * count)
			if st.Incomplete != "" || m.Sent != want || m.Corrupted != wantCorrupt || m.Received != want-wantCorrupt || m.Duplicates != 0 || m.Foreign != 0 {
				t.Fatalf("incomplete %q sent %d received %d corrupted %d dup %d foreign %d; want %d sent, %d corrupted, the rest received (errors %v)",
					st.Incomplete, m.Sent, m.Received, m.Corrupted, m.Duplicates, m.Foreign, want, wantCorrupt, st.ErrorSamples)
			}
		})
	}
}

// TestPayloadRenderAndCheckDoNotAllocate: rendering a templated message
// with its header property, finding its header and checking it again on
// the receiving side allocate nothing.
func TestPayloadRenderAndCheckDoNotAllocate(t *testing.T) {
	for _, tt := range []struct{ name, publish string }{
		{"prefix", `      payload: '{"id":"%c","n":%s,"t":%t,"T":"%T","v":%{float:-5:40:2},"s":"%{choice:ok|warn}","x":"%{hex:40}"}'`},
		{"field", `      payload: '{"h":"%h","id":"%c","temp":%{int:-20:45}}'`},
		{"property", "      header: property\n      payload: '{\"device\":%i,\"seq\":%s}'"},
		{"sizes", "      size: [{size: 32B, weight: 3}, {size: 2KB, weight: 1}]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog := payloadPlan(t, tt.publish, 10)
			checks := newPayloadChecks(prog)
			pattern := padPattern(prog.MaxPayload)
			pc := &prog.Clients[2]
			w := newPayloadWriter(pc.Publish)
			var wire []byte // the PUBLISH's properties as a subscriber reads them
			seq := uint32(0)
			allocs := testing.AllocsPerRun(200, func() {
				seq++
				k := plans.PayloadKey{Seed: checks.seed, Pub: uint32(pc.Index), Seq: seq, Intended: 1_700_000_000_000_000_000 + int64(seq)*1e6}
				payload, props := w.fill(pattern, pc, k)
				wire = append(wire[:0], props...)
				h, place := checks.findHeader(wire, payload)
				if place == placeNone || h.seq != seq || !checks.contentOK(pattern, payload, h, place, pc) {
					t.Fatalf("message %d does not check: place %d header %+v", seq, place, h)
				}
			})
			if allocs != 0 {
				t.Errorf("%.1f allocations per message, want 0", allocs)
			}
		})
	}
}

// TestMixedHeaderPlacements: one subscriber hears publishers that put the
// header in every place at once (binary prefix, template prefix, a %h
// field at offset 0, a user property): each delivery's header is found
// where its publisher put it (a field's text that begins another's
// included), and all are received intact.
func TestMixedHeaderPlacements(t *testing.T) {
	src := `
groups:
  - name: all
    subscribe: {topic: "mx/#", qos: 1}
  - name: binary
    publish: {topic: mx/b, qos: 1, every: 5ms, count: 10, size: {min: 16B, max: 64B}}
  - name: prefix
    publish: {topic: mx/p, qos: 1, every: 5ms, count: 10, payload: '%s,%{int:0:9}'}
  - name: field
    publish: {topic: mx/f, qos: 1, every: 5ms, count: 10, payload: '%h,%s'}
  - name: property
    publish: {topic: mx/u, qos: 1, every: 5ms, count: 10, header: property, payload: '%s'}
  - name: field-a
    publish: {topic: mx/a, qos: 1, every: 5ms, count: 10, payload: 'a%h'}
  - name: field-ab
    publish: {topic: mx/ab, qos: 1, every: 5ms, count: 10, payload: 'ab%h%{hex:4}'}
drain: 1s
`
	p, err := plans.LoadBytes("mixed.yaml", []byte(src), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := runWith(t, compile(t, p), broker.Options{}, Options{})
	m := all(st)
	if st.Incomplete != "" || m.Sent != 60 || m.Received != 60 || m.Corrupted != 0 || m.Foreign != 0 || m.Lost != 0 {
		t.Fatalf("incomplete %q sent %d received %d corrupted %d foreign %d lost %d; want 60 sent and received (errors %v)",
			st.Incomplete, m.Sent, m.Received, m.Corrupted, m.Foreign, m.Lost, st.ErrorSamples)
	}
}
