package runner

import (
	"bytes"
	"encoding/binary"

	"github.com/mqplan/mqplan/plans"
)

// Payload layout: the 16-byte measurement header (docs/plan-format.md,
// "Latency is measured without coordinated omission") followed by
// deterministic padding up to the publish size.
//
//	offset 0  uint32  publisher number (index in Program.Clients)
//	offset 4  uint32  sequence, 1-based per publisher
//	offset 8  int64   intended send time, Unix ns (the run's wall-clock
//	                  epoch plus monotonic time since it, so it never jumps
//	                  within a run, and another mqplan process on the same
//	                  machine can measure latency from it)
//	offset 16 ...     padding: padPattern[padOffset(pub, seq):][:size-16]
//
// The padding depends on publisher and sequence, so a payload delivered to
// the wrong stream, truncated, or altered anywhere fails the content check.

// padCycle is the period of the padding pattern; a prime so that padding
// offsets of neighbouring sequences differ.
const padCycle = 251

// padPattern returns the run's padding source: maxPayload+padCycle bytes of
// a fixed pseudo-random sequence, computed once per run.
func padPattern(maxPayload int) []byte {
	n := maxPayload + padCycle
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		// xorshift32: cheap, deterministic, no obvious runs of equal bytes.
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x >> 24)
	}
	return b
}

func padOffset(pub, seq uint32) int { return int((pub*31 + seq) % padCycle) }

// encodePayload writes a complete payload of len(buf) bytes into buf
// without allocating.
func encodePayload(buf []byte, pattern []byte, pub, seq uint32, intended int64) {
	binary.BigEndian.PutUint32(buf[0:4], pub)
	binary.BigEndian.PutUint32(buf[4:8], seq)
	binary.BigEndian.PutUint64(buf[8:16], uint64(intended))
	if len(buf) > plans.HeaderSize {
		off := padOffset(pub, seq)
		copy(buf[plans.HeaderSize:], pattern[off:off+len(buf)-plans.HeaderSize])
	}
}

// header is a decoded measurement header.
type header struct {
	pub      uint32
	seq      uint32
	intended int64
}

// decodeHeader reads the header; ok is false when the payload is too short.
func decodeHeader(p []byte) (h header, ok bool) {
	if len(p) < plans.HeaderSize {
		return h, false
	}
	h.pub = binary.BigEndian.Uint32(p[0:4])
	h.seq = binary.BigEndian.Uint32(p[4:8])
	h.intended = int64(binary.BigEndian.Uint64(p[8:16]))
	return h, true
}

// paddingOK checks the content after the header against what the
// publisher wrote, given the size the publisher's group sends.
func paddingOK(p []byte, pattern []byte, h header, size int) bool {
	if len(p) != size || size < plans.HeaderSize {
		return false
	}
	off := padOffset(h.pub, h.seq)
	end := off + size - plans.HeaderSize
	if end > len(pattern) {
		return false
	}
	return bytes.Equal(p[plans.HeaderSize:], pattern[off:end])
}
