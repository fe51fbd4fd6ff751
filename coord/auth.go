package coord

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
)

// nonceSize is each side's fresh random nonce in the handshake: 32 bytes,
// so that a session key never repeats across the runs of a secret.
const nonceSize = 32

// macSize is a sealed frame's MAC (HMAC-SHA256).
const macSize = sha256.Size

// The labels of what is MACed: a role's proof can never stand for the
// other role's, nor for a session key.
const (
	labelShard       = "mqplan shard v1"
	labelCoordinator = "mqplan coordinator v1"
	labelSession     = "mqplan session v1"
)

// Direction bytes in every frame MAC: a frame one side sent cannot be
// reflected back to it.
const (
	dirToCoordinator = 's'
	dirToShard       = 'c'
)

// AuthError is a peer that speaks the protocol but failed its
// authentication: no secret or another one, a frame whose MAC fails
// (forged, altered, replayed, reordered), or a handshake out of order.
// The run it touched cannot be trusted to be complete.
type AuthError struct{ Why string }

func (e *AuthError) Error() string { return "authentication failed: " + e.Why }

// noiseError is a connection that does not speak the protocol at all
// (garbage, an HTTP probe, a port scanner that connects and leaves).
type noiseError struct{ why string }

func (e *noiseError) Error() string { return e.why }

// newNonce returns a fresh random nonce.
func newNonce() []byte {
	b := make([]byte, nonceSize)
	// crypto/rand.Read never fails (Go 1.24 and later: it crashes the
	// program rather than return predictable bytes).
	_, _ = rand.Read(b)
	return b
}

// proof is a role's proof of the secret: HMAC-SHA256(secret, label ||
// shard nonce || coordinator nonce || the hello's JSON).
func proof(secret []byte, label string, nonceShard, nonceCoord []byte, hello *Hello) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write(nonceShard)
	m.Write(nonceCoord)
	b, _ := json.Marshal(hello) // a Hello of strings and ints always marshals
	m.Write(b)
	return m.Sum(nil)
}

// sessionKey is HMAC-SHA256(secret, "mqplan session v1" || shard nonce ||
// coordinator nonce): new for every connection, as the nonces are.
func sessionKey(secret, nonceShard, nonceCoord []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(labelSession))
	m.Write(nonceShard)
	m.Write(nonceCoord)
	return m.Sum(nil)
}

// checkNonce refuses a nonce of the wrong size (a peer that reuses an
// empty one would get a predictable session key).
func checkNonce(who string, n []byte) error {
	if len(n) != nonceSize {
		return &AuthError{Why: fmt.Sprintf("%s's nonce has %d bytes, want %d", who, len(n), nonceSize)}
	}
	return nil
}

// sealer MACs (or checks) the frames of one direction of a connection:
// HMAC-SHA256(session key, direction || sequence number || header ||
// body), the sequence number counting that direction's sealed frames from
// 0. The hash is reused: no allocation per frame beyond the tag.
type sealer struct {
	m   hash.Hash
	dir byte
	seq uint64
}

func newSealer(key []byte, dir byte) *sealer {
	return &sealer{m: hmac.New(sha256.New, key), dir: dir}
}

// sum MACs the next frame, advancing the sequence number.
func (s *sealer) sum(hdr [4]byte, body []byte) []byte {
	var pre [9]byte
	pre[0] = s.dir
	binary.BigEndian.PutUint64(pre[1:], s.seq)
	s.seq++
	s.m.Reset()
	s.m.Write(pre[:])
	s.m.Write(hdr[:])
	s.m.Write(body)
	return s.m.Sum(nil)
}

// seal returns the MAC of the next frame sent.
func (s *sealer) seal(hdr [4]byte, body []byte) []byte { return s.sum(hdr, body) }

// check reports whether tag is the next frame's MAC, in constant time.
func (s *sealer) check(hdr [4]byte, body, tag []byte) bool {
	return hmac.Equal(s.sum(hdr, body), tag)
}

// keyed sets the connection's session key: from here on every frame is
// sealed. self is the direction this side sends.
func (c *conn) keyed(key []byte, self byte) {
	other := byte(dirToCoordinator)
	if self == dirToCoordinator {
		other = dirToShard
	}
	c.wmu.Lock()
	c.out = newSealer(key, self)
	c.wmu.Unlock()
	c.in = newSealer(key, other)
}
