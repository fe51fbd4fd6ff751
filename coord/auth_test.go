package coord

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	runSecret   = []byte("the run's secret, 32 bytes long!")
	otherSecret = []byte("another run's secret, as long...")
)

// refusals collects Config.Refused's calls.
type refusals struct {
	mu    sync.Mutex
	lines []string
	got   chan struct{}
}

func newRefusals() *refusals { return &refusals{got: make(chan struct{}, 16)} }

func (r *refusals) refused(addr string, why error) {
	r.mu.Lock()
	r.lines = append(r.lines, addr+": "+why.Error())
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *refusals) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// rawDial is an imposter's connection: it reads the coordinator's
// challenge as any client of the frame protocol can.
func rawDial(t *testing.T, addr string) (net.Conn, *frame) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	ch, err := decode(c, nil, false, nil)
	if err != nil || ch.Type != tChallenge || len(ch.Nonce) != nonceSize {
		t.Fatalf("challenge: %+v %v", ch, err)
	}
	return c, ch
}

// readAll reads what the coordinator answers until it closes: the
// imposter is never sent a sealed frame or a welcome.
func readAll(t *testing.T, c net.Conn) []*frame {
	t.Helper()
	var got []*frame
	for {
		f, err := decode(c, nil, false, nil)
		if err != nil {
			var ae *AuthError
			if errors.As(err, &ae) {
				t.Errorf("the coordinator sent the imposter a sealed frame")
			}
			return got
		}
		got = append(got, f)
	}
}

// TestImposterRefused: a peer that knows the plan, the run id and the
// build but not the secret is refused at its hello, whatever it tries;
// nothing it sends reaches a barrier or the parts, the coordinator says
// so once naming its address, and the run never completes as if it had
// been shard 1.
func TestImposterRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// imposter plays shard 1 against the coordinator at addr.
		imposter func(t *testing.T, addr string)
		want     string
	}{
		{"no secret", func(t *testing.T, addr string) {
			_, err := Join(context.Background(), addr, shardHello(1), nil, 5*time.Second, 0)
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), "the shard has no secret") {
				t.Errorf("imposter: %v, want refused for having no secret", err)
			}
		}, "the shard has no secret"},
		{"another secret", func(t *testing.T, addr string) {
			_, err := Join(context.Background(), addr, shardHello(1), otherSecret, 5*time.Second, 0)
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), "does not match the run's secret") {
				t.Errorf("imposter: %v, want refused for another secret", err)
			}
		}, "does not match the run's secret"},
		{"barrier and part without a hello", func(t *testing.T, addr string) {
			c, _ := rawDial(t, addr)
			var b []byte
			b = append(b, encode(t, &frame{Type: tReady, Name: "epoch"})...)
			b = append(b, encode(t, &frame{Type: tPartial, Data: json.RawMessage(`{"forged":1}`)})...)
			_, _ = c.Write(b)
			readAll(t, c)
		}, "a ready frame before its hello"},
		{"a hello with a made-up proof, then sealed frames under a guessed key", func(t *testing.T, addr string) {
			c, ch := rawDial(t, addr)
			h := shardHello(1)
			h.Protocol, h.Keyed = Protocol, true
			ns := newNonce()
			b := encode(t, &frame{Type: tHello, Hello: &h, Nonce: ns, Proof: proof(otherSecret, labelShard, ns, ch.Nonce, &h)})
			out := newSealer(sessionKey(nil, ns, ch.Nonce), dirToCoordinator)
			for _, f := range []*frame{{Type: tReady, Name: "epoch"}, {Type: tPartial, Data: json.RawMessage(`{"forged":1}`)}} {
				body, _ := json.Marshal(f)
				_, _ = appendFrame(nil, out, body).WriteTo(&writer{&b})
			}
			_, _ = c.Write(b)
			if got := readAll(t, c); len(got) != 1 || got[0].Type != tRefuse {
				t.Errorf("the imposter was answered %+v, want one refusal", got)
			}
		}, "does not match the run's secret"},
		{"another protocol", func(t *testing.T, addr string) {
			c, _ := rawDial(t, addr)
			h := shardHello(1)
			h.Protocol = 1
			_, _ = c.Write(encode(t, &frame{Type: tHello, Hello: &h}))
			readAll(t, c)
		}, "speaks coordinator protocol 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ref := newRefusals()
			addr, done := serve(t, ctx, Config{Hello: testHello, Secret: runSecret, JoinTimeout: 2 * time.Second, Refused: ref.refused})
			s0, err := Join(ctx, addr, shardHello(0), runSecret, 5*time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s0.Close()
			tc.imposter(t, addr)
			r := within(t, ctx, done)
			var missing *MissingError
			if !errors.As(r.err, &missing) || !slices.Equal(missing.Shards, []int{1}) {
				t.Errorf("coordinator: %v, want shard 1 never joined", r.err)
			}
			if r.res.Parts[1] != nil {
				t.Errorf("the imposter's part got in: %s", r.res.Parts[1])
			}
			lines := ref.all()
			if len(lines) != 1 || !strings.Contains(lines[0], "127.0.0.1:") || !strings.Contains(lines[0], tc.want) ||
				len(r.res.Refused) != 1 || !strings.Contains(r.res.Refused[0], tc.want) {
				t.Errorf("refusals %q, result %q: want one naming the imposter's address and %q", lines, r.res.Refused, tc.want)
			}
			for _, l := range append(lines, r.res.Refused...) {
				if strings.Contains(l, string(runSecret)) || strings.Contains(l, string(otherSecret)) {
					t.Errorf("a refusal shows a secret: %s", l)
				}
			}
		})
	}
}

// writer appends to a byte slice (net.Buffers.WriteTo wants an io.Writer).
type writer struct{ b *[]byte }

func (w *writer) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// proxy relays one connection to addr, passing the shard's frames through
// edit (which returns the frames to send on in place of frame i, each
// raw: header, body and MAC) and recording them.
type proxy struct {
	ln       net.Listener
	mu       sync.Mutex
	captured [][]byte
}

func startProxy(t *testing.T, addr string, edit func(i int, raw []byte) [][]byte) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		defer in.Close()
		out, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer out.Close()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
		for i := 0; ; i++ {
			raw, err := readRaw(in)
			if err != nil {
				return
			}
			p.mu.Lock()
			p.captured = append(p.captured, raw)
			p.mu.Unlock()
			for _, r := range edit(i, raw) {
				if _, err := out.Write(r); err != nil {
					return
				}
			}
		}
	}()
	return p
}

func (p *proxy) frames() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.captured)
}

// readRaw reads one frame's bytes as they travel.
func readRaw(r io.Reader) ([]byte, error) {
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	w := binary.BigEndian.Uint32(hdr)
	n := int(w &^ sealedBit)
	if w&sealedBit != 0 {
		n += macSize
	}
	if n > 1<<20 {
		return nil, errors.New("too large for the test")
	}
	rest := make([]byte, n)
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, err
	}
	return append(hdr, rest...), nil
}

// TestTamperedFrames: a genuine shard's frames, captured on the way, are
// worth nothing to an imposter replaying them on a connection of its own
// (refused at the hello: the nonces are fresh), and a frame of a joined
// shard altered, replayed or dropped on its way makes that shard lost,
// the run incomplete, with one line naming its address.
func TestTamperedFrames(t *testing.T) {
	flip := func(raw []byte) []byte {
		b := slices.Clone(raw)
		b[len(b)-macSize-1] ^= 1 // the body's last byte
		return b
	}
	for _, tc := range []struct {
		name string
		edit func(i int, raw []byte) [][]byte
		// replay: an imposter replays shard 1's captured frames on a
		// connection of its own; shard 1 is then unharmed.
		replay bool
		want   string
	}{
		{"replayed on another connection", func(_ int, raw []byte) [][]byte { return [][]byte{raw} }, true, "does not match the run's secret"},
		{"a byte altered", func(i int, raw []byte) [][]byte {
			if i == 1 {
				return [][]byte{flip(raw)}
			}
			return [][]byte{raw}
		}, false, "frame 0 failed its MAC"},
		{"a frame replayed", func(i int, raw []byte) [][]byte {
			if i == 1 {
				return [][]byte{raw, raw}
			}
			return [][]byte{raw}
		}, false, "frame 1 failed its MAC"},
		{"a frame dropped", func(i int, raw []byte) [][]byte {
			if i == 1 {
				return nil
			}
			return [][]byte{raw}
		}, false, "frame 0 failed its MAC"},
		{"the MAC stripped", func(i int, raw []byte) [][]byte {
			if i == 1 {
				b := slices.Clone(raw[:len(raw)-macSize])
				b[0] &^= sealedBit >> 24
				return [][]byte{b}
			}
			return [][]byte{raw}
		}, false, "an unsealed frame after the handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ref := newRefusals()
			lost := make(chan string, 2)
			addr, done := serve(t, ctx, Config{Hello: testHello, Secret: runSecret, JoinTimeout: 5 * time.Second, Idle: 3 * time.Second,
				EpochDelay: 50 * time.Millisecond, Refused: ref.refused, Lost: func(i int, why error) { lost <- why.Error() }})
			p := startProxy(t, addr, tc.edit)
			s0, err := Join(ctx, addr, shardHello(0), runSecret, 5*time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s0.Close()
			s1, err := Join(ctx, p.ln.Addr().String(), shardHello(1), runSecret, 5*time.Second, 0)
			if err == nil {
				defer s1.Close()
			}
			if tc.replay {
				if err != nil {
					t.Fatal(err)
				}
				c, _ := rawDial(t, addr)
				for _, raw := range p.frames() {
					_, _ = c.Write(raw)
				}
				readAll(t, c)
				select {
				case <-ref.got:
				case <-ctx.Done():
					t.Fatal("the replay was never refused")
				}
			}
			var wg sync.WaitGroup
			for _, s := range []*Shard{s0, s1} {
				if s == nil {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := s.Epoch(ctx); err == nil {
						_ = s.HandIn([]byte(`{}`), 5*time.Second)
					}
				}()
			}
			wg.Wait()
			r := within(t, ctx, done)
			if r.err != nil {
				t.Fatalf("coordinator: %v", r.err)
			}
			if tc.replay {
				if len(r.res.Lost) != 0 || r.res.Parts[1] == nil {
					t.Errorf("%+v: the genuine shard 1 suffered from the replay", r.res)
				}
			} else {
				if !slices.Equal(r.res.Lost, []int{1}) || r.res.Parts[1] != nil {
					t.Errorf("lost %v, part %q: want shard 1 lost, without its part", r.res.Lost, r.res.Parts[1])
				}
				if why := within(t, ctx, lost); !strings.Contains(why, tc.want) || !strings.Contains(why, "127.0.0.1:") {
					t.Errorf("lost because %q, want its address and %q", why, tc.want)
				}
			}
			if len(r.res.Refused) != 1 || !strings.Contains(r.res.Refused[0], tc.want) {
				t.Errorf("refused %q, want one line saying %q", r.res.Refused, tc.want)
			}
		})
	}
}

// TestNoiseIsNotARefusal: connections that do not speak the protocol (an
// HTTP probe, garbage, a scanner that connects and leaves) are closed and
// counted, the first few told of, and the run completes untouched.
func TestNoiseIsNotARefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref := newRefusals()
	noise := make(chan string, 16)
	addr, done := serve(t, ctx, Config{Hello: testHello, Secret: runSecret, JoinTimeout: 5 * time.Second, EpochDelay: 50 * time.Millisecond,
		Refused: ref.refused, Noise: func(a string, why error) { noise <- a + ": " + why.Error() }})
	probes := []string{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "\x00\x00\x00\x05hello", ""}
	for _, p := range probes {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(p))
		c.Close()
	}
	for range probes {
		select {
		case <-noise:
		case <-ctx.Done():
			t.Fatal("a probe was never noted")
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Join(ctx, addr, shardHello(i), runSecret, 5*time.Second, 0)
			if err == nil {
				defer s.Close()
				if _, err = s.Epoch(ctx); err == nil {
					err = s.HandIn([]byte(`{}`), 5*time.Second)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	r := within(t, ctx, done)
	if r.err != nil || errors.Join(errs...) != nil || len(r.res.Lost) != 0 || len(r.res.Refused) != 0 || r.res.Noise != len(probes) {
		t.Fatalf("%+v %v %v: want a clean run with %d connections counted as noise", r.res, r.err, errs, len(probes))
	}
}

// TestFakeCoordinator: a listener that does not know the secret cannot
// pass for the coordinator: its welcome (sealed under a key it guessed)
// is refused by the shard, before any barrier.
func TestFakeCoordinator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		nc := newNonce()
		_, _ = c.Write(encode(t, &frame{Type: tChallenge, Nonce: nc, Protocol: Protocol}))
		f, err := decode(c, nil, false, nil)
		if err != nil || f.Hello == nil {
			return
		}
		out := newSealer(sessionKey(nil, f.Nonce, nc), dirToShard)
		body, _ := json.Marshal(&frame{Type: tWelcome, Proof: proof(nil, labelCoordinator, f.Nonce, nc, f.Hello)})
		_, _ = appendFrame(nil, out, body).WriteTo(c)
		_, _ = io.Copy(io.Discard, c)
	}()
	_, err = Join(ctx, ln.Addr().String(), shardHello(0), runSecret, 5*time.Second, 0)
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "failed its MAC") {
		t.Fatalf("%v: want the fake welcome refused", err)
	}
}

// within receives from ch, failing the test when ctx ends first.
func within[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatal("no answer before the test's deadline")
		panic("unreachable")
	}
}

// BenchmarkFrame: a partial's frame (1 MiB) written and read, sealed
// (the MAC computed over the body in place) and not: the MAC adds its
// hashing time and a 32-byte tag, never a copy of the body.
func BenchmarkFrame(b *testing.B) {
	data := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	body, err := json.Marshal(&frame{Type: tPartial, Data: data})
	if err != nil {
		b.Fatal(err)
	}
	key := sessionKey(runSecret, newNonce(), newNonce())
	for _, sealed := range []bool{false, true} {
		b.Run(fmt.Sprintf("sealed=%v", sealed), func(b *testing.B) {
			var out, in *sealer
			if sealed {
				out, in = newSealer(key, dirToCoordinator), newSealer(key, dirToCoordinator)
			}
			var buf bytes.Buffer
			hdr := make([]byte, 0, 4)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if _, err := appendFrame(hdr, out, body).WriteTo(&buf); err != nil {
					b.Fatal(err)
				}
				if _, err := decode(&buf, in, false, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
