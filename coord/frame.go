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

// Protocol is this protocol's version, in every hello: shards of other
// versions are refused.
const Protocol = 1

// Frame types.
const (
	tHello   = "hello"   // shard → coordinator: Hello
	tWelcome = "welcome" // coordinator → shard: accepted; Boot, At, Mono, Delay (samehost.go)
	tRefuse  = "refuse"  // coordinator → shard: Error says why
	tPing    = "ping"    // shard → coordinator: T0
	tPong    = "pong"    // coordinator → shard: T0, T1, T2
	tClock   = "clock"   // shard → coordinator: Offset, Delay (its estimate)
	tReady   = "ready"   // shard → coordinator: Name, Vals, At
	tGo      = "go"      // coordinator → shard: Name, Vals (sums), At
	tStop    = "stop"    // either way: stop publishing, drain, hand in the partial
	tPartial = "partial" // shard → coordinator: Data
	tAck     = "ack"     // coordinator → shard: the partial is in
	tBeat    = "beat"    // either way, every second: the peer is alive
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
}

// conn is a connection's framing: reads bounded in size and time, writes
// serialised.
type conn struct {
	c    net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
	idle time.Duration
}

func newConn(c net.Conn, idle time.Duration) *conn {
	return &conn{c: c, r: bufio.NewReader(c), idle: idle}
}

// read reads one frame, within idle for its header and, for its body,
// idle plus a second per MiB (a partial over a slow link).
func (c *conn) read() (*frame, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return nil, err
	}
	return decode(c.r, func(n uint32) error {
		return c.c.SetReadDeadline(time.Now().Add(c.idle + time.Duration(n>>20)*time.Second))
	})
}

// decode reads one frame from r: its length, then its body, bounded by
// MaxFrame before anything is allocated for it; body, when set, is told
// the length first (conn.read extends its deadline for a large frame).
func decode(r io.Reader, body func(n uint32) error) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("a frame of %d bytes: more than the %d a frame may have", n, MaxFrame)
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
	f := &frame{}
	if err := json.Unmarshal(b.Bytes(), f); err != nil {
		return nil, fmt.Errorf("a frame that is not the protocol's: %w", err)
	}
	return f, nil
}

// write sends one frame, within idle plus a second per MiB.
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
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	if _, err := c.c.Write(hdr[:]); err != nil {
		return err
	}
	_, err = c.c.Write(body)
	return err
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
