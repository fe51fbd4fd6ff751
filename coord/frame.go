// Package coord owns the coordinator protocol of a sharded run (mqplan run
// --shard I/N --coordinator HOST:PORT, and --workers N): one TCP
// connection per shard carrying length-prefixed JSON frames, on which the
// shards introduce themselves (and are refused when they run another
// plan, assignment or build), sample their clock offset to the
// coordinator, meet at the run's barriers (the common epoch, the connect
// and subscribe counts, the publish start, the expected deliveries), stop
// together, and hand over their partial results. It runs nothing and
// judges nothing: the runner calls a Shard at its barriers, and
// cmd/mqplan merges what a Coordinator collected.
//
// Every read has a deadline (both sides send a beat every second while
// waiting), and every frame is bounded (MaxFrame).
//
// # Authentication
//
// Every connection is authenticated with the run's shared secret (auth.go),
// because the hello's checks (plan, assignment, run id, build) are
// computable by anyone who has the plan: without a secret, a stranger
// who reaches the port could join as a shard, answer its barriers and
// hand in a forged part. The coordinator opens each connection with a
// challenge (a fresh 32-byte random nonce); the shard answers with its
// hello, a nonce of its own and a proof, HMAC-SHA256 under the secret of
// its role, both nonces and the hello's bytes; the coordinator's welcome
// carries its own proof (its role, both nonces, the same hello). Both
// then derive a session key, HMAC-SHA256(secret, "mqplan session v1" ||
// shard nonce || coordinator nonce), and every later frame carries a
// MAC under it over its direction, its sequence number in that direction,
// its header and its bytes: a frame cannot be forged without the secret,
// nor altered, replayed (on this connection or another: the nonces are
// fresh) or reordered without its MAC failing, which ends the connection.
//
// Why HMAC and not TLS: crypto/tls has no external pre-shared-key mode,
// and certificates would have to be issued and distributed for every run
// (every pod of a Job), where one secret file per run is what Kubernetes
// mounts in every pod anyway. Frames are authenticated, not encrypted:
// they carry counts, clock readings and partial results whose secrets are
// already redacted (the plan's passwords never enter a part), so what a
// listener learns is the load test's figures, which it could measure on
// the broker itself.
//
// A run without a secret speaks the same protocol under an empty key: its
// frames are checked for integrity but anyone can compute their MACs, so
// cmd/mqplan keeps such a coordinator on loopback.
package coord

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// MaxFrame bounds a frame: a partial result (partial.MaxSize, 256 MiB)
// and its envelope. A length above it ends the connection before anything
// is allocated for it.
const MaxFrame = 256<<20 + 64<<10

// Protocol is this protocol's version, in every challenge and hello:
// peers of other versions are refused. Version 2 authenticates every
// frame (auth.go).
const Protocol = 2

// Frame types.
const (
	tChallenge = "challenge" // coordinator → shard, unauthenticated, first: Nonce, Protocol
	tHello     = "hello"     // shard → coordinator, unauthenticated: Hello, Nonce, Proof
	tWelcome   = "welcome"   // coordinator → shard: accepted; Proof, Boot, At, Mono, Delay (samehost.go)
	tRefuse    = "refuse"    // coordinator → shard: Error says why
	tPing      = "ping"      // shard → coordinator: T0
	tPong      = "pong"      // coordinator → shard: T0, T1, T2
	tClock     = "clock"     // shard → coordinator: Offset, Delay (its estimate)
	tReady     = "ready"     // shard → coordinator: Name, Vals, At
	tGo        = "go"        // coordinator → shard: Name, Vals (sums), At
	tStop      = "stop"      // either way: stop publishing, drain, hand in the partial
	tPartial   = "partial"   // shard → coordinator: Data
	tAck       = "ack"       // coordinator → shard: the partial is in
	tBeat      = "beat"      // either way, every second: the peer is alive
)

// Hello is what a shard says of itself first; the coordinator refuses
// any field that differs from its own run's.
type Hello struct {
	Shard, N int
	RunID    string `json:"run_id"`
	// PlanSHA256 hashes the plan as every shard resolved it; AssignSHA256
	// the assignment of clients to shards (plans.Assignment.Hash).
	PlanSHA256   string `json:"plan_sha256"`
	AssignSHA256 string `json:"assign_sha256"`
	// Broker names the broker URLs the shard's clients connect to (user
	// information redacted): a shard given another --broker is refused
	// naming it, before the plan hash (which holds it too) would refuse
	// it as another plan.
	Broker string `json:"broker,omitempty"`
	// Version is the mqplan build; Protocol this package's.
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	// Keyed says the shard has a secret (not which): a refusal can then
	// say which side lacks one.
	Keyed bool `json:"keyed,omitempty"`
}

// frame is one message either way; the fields used depend on Type.
type frame struct {
	Type       string          `json:"type"`
	Hello      *Hello          `json:"hello,omitempty"`
	Error      string          `json:"error,omitempty"`
	Name       string          `json:"name,omitempty"`
	Vals       []int64         `json:"vals,omitempty"`
	At         int64           `json:"at,omitempty"`
	T0, T1, T2 int64           `json:",omitempty"`
	Offset     int64           `json:"offset,omitempty"`
	Delay      int64           `json:"delay,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	// Boot is the coordinator's boot id, in its welcome; Mono a
	// CLOCK_MONOTONIC reading: in the welcome, at the wall instant At
	// (within ±Delay); in the epoch's go, the epoch itself, for the
	// shards on the coordinator's host (samehost.go). Older peers leave
	// them out, and their shards align through the clock samples.
	Boot string `json:"boot,omitempty"`
	Mono int64  `json:"mono,omitempty"`
	// Nonce is the sender's fresh random nonce (challenge, hello), Proof
	// its HMAC proof of the run's secret (hello, welcome; auth.go), and
	// Protocol the coordinator's version (challenge).
	Nonce    []byte `json:"nonce,omitempty"`
	Proof    []byte `json:"proof,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
}

// conn is a connection's framing: reads bounded in size and time, writes
// serialised.
type conn struct {
	c    net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
	idle time.Duration
	// in and out authenticate the frames each way once the handshake
	// derived the session key (nil before: only the handshake's frames
	// travel unsealed). out is used under wmu; in by the one reader.
	in, out *sealer
	// plainRefuse admits an unsealed refuse as the next frame read: a
	// shard waiting for its welcome (decode).
	plainRefuse bool
	// welcomeProof is the coordinator's proof for this connection's
	// welcome, set by its handshake.
	welcomeProof []byte
}

func newConn(c net.Conn, idle time.Duration) *conn {
	return &conn{c: c, r: bufio.NewReader(c), idle: idle}
}

// read reads one frame, within idle for its header and, for its body,
// idle plus a second per MiB (a partial over a slow link). Once the
// session key is set, a frame must be sealed and its MAC hold (else an
// *AuthError); before, it must be unsealed.
func (c *conn) read() (*frame, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return nil, err
	}
	return decode(c.r, c.in, c.plainRefuse, func(n uint32) error {
		return c.c.SetReadDeadline(time.Now().Add(c.idle + time.Duration(n>>20)*time.Second))
	})
}

// sealedBit marks a frame's length as followed by a MAC (auth.go): a
// length is at most MaxFrame, far below it.
const sealedBit = 1 << 31

// decode reads one frame from r: its length, then its body, bounded by
// MaxFrame before anything is allocated for it, then, when in is set,
// its MAC, checked before the body is parsed; body, when set, is told
// the length first (conn.read extends its deadline for a large frame).
// plainRefuse admits, with in set, an unsealed refuse: the answer of a
// coordinator to a shard that failed authentication, which it cannot
// seal for it.
func decode(r io.Reader, in *sealer, plainRefuse bool, body func(n uint32) error) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	word := binary.BigEndian.Uint32(hdr[:])
	sealed, n := word&sealedBit != 0, word&^sealedBit
	if n > MaxFrame {
		return nil, &noiseError{fmt.Sprintf("a frame of %d bytes: more than the %d a frame may have", n, MaxFrame)}
	}
	switch {
	case in != nil && !sealed && !plainRefuse:
		return nil, &AuthError{Why: "an unsealed frame after the handshake"}
	case in == nil && sealed:
		return nil, &AuthError{Why: "a sealed frame before the handshake"}
	}
	if body != nil {
		if err := body(n); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(r, int64(n))); err != nil {
		return nil, err
	}
	if b.Len() != int(n) {
		return nil, io.ErrUnexpectedEOF
	}
	if in != nil && sealed {
		var tag [macSize]byte
		if _, err := io.ReadFull(r, tag[:]); err != nil {
			return nil, err
		}
		if seq := in.seq; sealed && !in.check(hdr, b.Bytes(), tag[:]) {
			return nil, &AuthError{Why: fmt.Sprintf("frame %d failed its MAC (forged, altered, replayed or reordered)", seq)}
		}
	}
	f := &frame{}
	if err := json.Unmarshal(b.Bytes(), f); err != nil {
		return nil, &noiseError{"a frame that is not the protocol's: " + err.Error()}
	}
	if f.Type == "" {
		return nil, &noiseError{"a frame without a type"}
	}
	if in != nil && !sealed && f.Type != tRefuse {
		return nil, &AuthError{Why: "an unsealed " + f.Type + " frame after the handshake"}
	}
	return f, nil
}

// write sends one frame, within idle plus a second per MiB, sealed once
// the session key is set.
func (c *conn) write(f *frame) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("a %s frame of %d bytes: more than the %d a frame may have", f.Type, len(body), MaxFrame)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.c.SetWriteDeadline(time.Now().Add(c.idle + time.Duration(len(body)>>20)*time.Second)); err != nil {
		return err
	}
	_, err = appendFrame(nil, c.out, body).WriteTo(c.c)
	return err
}

// appendFrame returns the buffers of one frame: its header, its body and,
// when out is set, its MAC (out's sequence number then advances). The
// body is not copied: the MAC is computed over it in place.
func appendFrame(hdr []byte, out *sealer, body []byte) *net.Buffers {
	word := uint32(len(body))
	if out != nil {
		word |= sealedBit
	}
	hdr = binary.BigEndian.AppendUint32(hdr[:0], word)
	bufs := net.Buffers{hdr, body}
	if out != nil {
		bufs = append(bufs, out.seal([4]byte(hdr), body))
	}
	return &bufs
}

// beatEvery is how often each side says it is alive while the run goes
// on; a peer silent for the idle timeout (several beats) is lost.
const beatEvery = time.Second

// beat writes a beat every beatEvery until stop is closed.
func (c *conn) beat(stop <-chan struct{}) {
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if c.write(&frame{Type: tBeat}) != nil {
				return
			}
		}
	}
}
