package partial

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
)

// A signed part is the JSON document Write writes with one last member,
// "mqplan_mac": "hmac-sha256:KEYID:MAC", in place of its closing "\n}\n":
//
//	{ ...the document's members...,
//	 "mqplan_mac": "hmac-sha256:0123456789abcdef:<64 hex digits>"
//	}
//
// MAC is HMAC-SHA256(secret, "mqplan part v1\n" || the document as Write
// wrote it, unsigned), so that the exact bytes are authenticated (an
// altered figure, a reindented file, a member added or removed: each
// fails), and KEYID the first 8 bytes of HMAC-SHA256(secret, "mqplan key
// id v1"), which names the secret without revealing it: a part signed
// with another secret is told apart from an altered one. The document
// stays JSON that any tool reads.
const (
	macMember  = ",\n \"mqplan_mac\": \""
	macClosing = "\"\n}\n"
	docClosing = "\n}\n"
	macAlg     = "hmac-sha256"
	labelPart  = "mqplan part v1\n"
	labelKeyID = "mqplan key id v1"
)

// KeyID names a secret in a signed part's mqplan_mac.
func KeyID(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(labelKeyID))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

func partMAC(secret []byte) hash.Hash {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(labelPart))
	return m
}

// WriteSigned writes f as Write does, signed with secret: the MAC is
// computed as the document is written, without a copy of it.
func WriteSigned(w io.Writer, f *File, secret []byte) error {
	m := partMAC(secret)
	hw := &holdBack{w: w, m: m}
	unsigned := *f
	unsigned.MAC = ""
	if err := Write(hw, &unsigned); err != nil {
		return err
	}
	if hw.err != nil {
		return hw.err
	}
	if string(hw.tail[:hw.n]) != docClosing {
		return fmt.Errorf("partial: the document ends in %q, not %q", hw.tail[:hw.n], docClosing)
	}
	m.Write([]byte(docClosing))
	_, err := fmt.Fprintf(w, "%s%s:%s:%x%s", macMember, macAlg, KeyID(secret), m.Sum(nil), macClosing)
	return err
}

// holdBack passes what is written to w and m but its last three bytes,
// the document's closing, which the signature replaces.
type holdBack struct {
	w    io.Writer
	m    hash.Hash
	tail [len(docClosing)]byte
	n    int
	err  error
}

func (h *holdBack) Write(p []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	total := len(p)
	if h.n+len(p) <= len(h.tail) {
		h.n += copy(h.tail[h.n:], p)
		return total, nil
	}
	// Emit the held bytes and p but its last len(tail) bytes.
	keep := len(h.tail)
	out := h.n + len(p) - keep // bytes to emit
	fromTail := min(out, h.n)
	if fromTail > 0 {
		h.emit(h.tail[:fromTail])
	}
	if out > fromTail {
		h.emit(p[:out-fromTail])
	}
	// The new tail: what is left of the old one, then p's end.
	var t [len(docClosing)]byte
	k := copy(t[:], h.tail[fromTail:h.n])
	copy(t[k:], p[len(p)-(keep-k):])
	h.tail, h.n = t, keep
	return total, h.err
}

func (h *holdBack) emit(b []byte) {
	if h.err != nil {
		return
	}
	h.m.Write(b)
	_, h.err = h.w.Write(b)
}

// Unsigned, Altered and OtherSecret are why a part's signature does not
// hold (SignatureError.Kind).
const (
	Unsigned    = "unsigned"
	Altered     = "altered"
	OtherSecret = "signed with another secret"
)

// SignatureError is a part whose signature does not hold under the
// secret given: Kind says how.
type SignatureError struct {
	Name, Kind, Why string
}

func (e *SignatureError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Name, e.Kind, e.Why) }

// Signed reports whether a part's bytes end in a signature (whether or
// not it holds).
func Signed(data []byte) bool {
	_, _, _, ok := splitSigned(data)
	return ok
}

// splitSigned cuts a signed part into its document without the closing,
// its key id and its MAC (hex); ok is false when it does not end in a
// signature as WriteSigned writes it.
func splitSigned(data []byte) (doc []byte, keyID, mac string, ok bool) {
	if !bytes.HasSuffix(data, []byte(macClosing)) {
		return nil, "", "", false
	}
	i := bytes.LastIndex(data, []byte(macMember))
	if i < 0 || i+len(macMember) > len(data)-len(macClosing) {
		return nil, "", "", false
	}
	val := string(data[i+len(macMember) : len(data)-len(macClosing)])
	// hmac-sha256:KEYID(16):MAC(64)
	if len(val) != len(macAlg)+1+16+1+64 || val[:len(macAlg)+1] != macAlg+":" || val[len(macAlg)+17] != ':' {
		return nil, "", "", false
	}
	return data[:i], val[len(macAlg)+1 : len(macAlg)+17], val[len(macAlg)+18:], true
}

// Verify checks a part's signature under secret: nil when it holds, else
// a *SignatureError saying whether the part is unsigned, altered, or
// signed with another secret. name is the file's, for the error.
func Verify(name string, data, secret []byte) error {
	doc, keyID, mac, ok := splitSigned(data)
	switch {
	case !ok && bytes.Contains(data, []byte(`"mqplan_mac"`)):
		return &SignatureError{name, Altered, "its mqplan_mac is not the last member as mqplan writes it"}
	case !ok:
		return &SignatureError{name, Unsigned, "it carries no mqplan_mac (written by a run without a secret)"}
	case keyID != KeyID(secret):
		return &SignatureError{name, OtherSecret, "its key id " + keyID + " is not the secret's given here"}
	}
	want, err := hex.DecodeString(mac)
	if err != nil {
		return &SignatureError{name, Altered, "its mqplan_mac is not hexadecimal"}
	}
	m := partMAC(secret)
	m.Write(doc)
	m.Write([]byte(docClosing))
	if !hmac.Equal(m.Sum(nil), want) {
		return &SignatureError{name, Altered, "its bytes do not match its mqplan_mac (changed since it was written)"}
	}
	return nil
}
