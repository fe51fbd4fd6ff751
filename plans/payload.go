package plans

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Payload templates (publish.payload): the text real systems parse, such
// as JSON telemetry, with placeholders filled per message. A template is
// parsed once per group at load time into literal chunks and holes;
// rendering appends into a caller's buffer and allocates nothing once
// the buffer has grown to MaxLen.
//
// Every value a message's payload holds is a pure function of the plan
// seed, the publisher number (its index in Program.Clients), the message's
// sequence and its intended send time, so the receiver renders the same
// bytes again and compares them byte for byte (the content check, counted
// as corrupted when it fails).
//
// Placeholders, beside the topic templates' %c, %u, %i and %%:
//
//	%s                  the message's sequence number, 1-based per publisher
//	%t                  its intended send time, Unix milliseconds
//	%T                  the same time as RFC 3339 UTC with milliseconds
//	%h                  the measurement header, 32 hex digits (header: field)
//	%{int:LO:HI}        a uniform integer in [LO, HI]
//	%{float:LO:HI:D}    a uniform number in [LO, HI] with D decimals (0-9)
//	%{choice:A|B|C}     one of the listed texts, uniformly
//	%{hex:N}            N random hex digits (1-64), an id
//
// Random values come from a counter-based SplitMix64 stream keyed by
// (seed, publisher, sequence, hole), never from a generator's state, so
// any message's payload can be rendered alone.
type PayloadTemplate struct {
	raw   string
	parts []payloadPart
	// fixedLen is the length of the literal text; maxVar bounds the rest
	// bar %c and %u, which depend on the client; ids and users count them,
	// so that MaxLen costs the same whatever the template.
	fixedLen, maxVar int
	ids, users       int
	// headerAt is the byte offset of %h, which only literal text may
	// precede so that the receiver finds it; -1 without %h.
	headerAt int
}

// payloadPart is one chunk (verb 0) or hole of a template.
type payloadPart struct {
	verb byte // 0 literal, c u i s t T h, or I (int), F (float), C (choice), X (hex)
	lit  string
	// lo and hi bound an int, or a float scaled by 10^dec.
	lo, hi  int64
	dec     int
	choices []string
	// hole numbers the random holes, the last key of their stream.
	hole uint64
}

// Limits of templates: bounded work per message and bounded memory.
const (
	maxPayloadTemplate = 64 << 10 // bytes of template text
	maxTemplateHoles   = 256      // random holes in one template
	maxChoices         = 256      // texts in one %{choice}
	maxHexDigits       = 64
	maxRandomInt       = 1e15 // |LO|, |HI| of %{int} and scaled %{float}
	// HeaderHexLen is the length of the header as %h and the user
	// property carry it: the 16 header bytes in lowercase hex.
	HeaderHexLen = 2 * HeaderSize
	// rfc3339Milli is %T's layout; its output is always 24 bytes.
	rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"
)

// ParsePayloadTemplate parses a publish.payload template; the error names
// the first bad placeholder and its byte offset.
func ParsePayloadTemplate(s string) (*PayloadTemplate, error) {
	if len(s) > maxPayloadTemplate {
		return nil, fmt.Errorf("a payload template of %d bytes is too long (at most %d)", len(s), maxPayloadTemplate)
	}
	t := &PayloadTemplate{raw: s, headerAt: -1}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, payloadPart{lit: lit.String()})
			t.fixedLen += lit.Len()
			lit.Reset()
		}
	}
	var holes uint64
	placeholders := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '%' {
			lit.WriteByte(ch)
			continue
		}
		if i+1 >= len(s) {
			return nil, fmt.Errorf("ends with a lone %% at offset %d; write %%%% for a literal %%", i)
		}
		at := i
		v := s[i+1]
		i++
		var p payloadPart
		switch v {
		case '%':
			lit.WriteByte('%')
			continue
		case 'c', 'u':
			p.verb = v
		case 'i':
			p.verb, p.hi = v, 20
		case 's':
			p.verb, p.hi = v, 10
		case 't':
			p.verb, p.hi = v, 20
		case 'T':
			p.verb, p.hi = v, int64(len("2006-01-02T15:04:05.000Z"))
		case 'h':
			if t.headerAt >= 0 {
				return nil, fmt.Errorf("%%h appears twice (offset %d): the header is carried once", at)
			}
			if placeholders > 0 {
				return nil, fmt.Errorf("%%h at offset %d follows another placeholder: only literal text may come before %%h, so that the receiver finds the header at a fixed offset (move it to the front, like {\"h\":\"%%h\",...})", at)
			}
			flush()
			t.headerAt = t.fixedLen
			p.verb, p.hi = v, HeaderHexLen
		case '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%%{ at offset %d has no closing }", at)
			}
			spec := s[i+1 : i+end]
			i += end
			var err error
			if p, err = parseRandomHole(spec); err != nil {
				return nil, fmt.Errorf("%%{%s} at offset %d: %v", spec, at, err)
			}
			if holes++; holes > maxTemplateHoles {
				return nil, fmt.Errorf("more than %d random placeholders", maxTemplateHoles)
			}
			p.hole = holes
		default:
			return nil, fmt.Errorf("unknown placeholder %%%c at offset %d (known: %%c %%u %%i %%s %%t %%T %%h %%{int:LO:HI} %%{float:LO:HI:D} %%{choice:A|B} %%{hex:N}, %%%% a literal %%)", v, at)
		}
		flush()
		placeholders++
		t.maxVar += p.maxLen()
		switch p.verb {
		case 'c':
			t.ids++
		case 'u':
			t.users++
		}
		t.parts = append(t.parts, p)
	}
	flush()
	return t, nil
}

// parseRandomHole parses the inside of %{...}.
func parseRandomHole(spec string) (payloadPart, error) {
	kind, args, _ := strings.Cut(spec, ":")
	switch kind {
	case "int":
		f := strings.Split(args, ":")
		if len(f) != 2 {
			return payloadPart{}, errors.New("write %{int:LO:HI}, like %{int:0:100}")
		}
		lo, err1 := strconv.ParseInt(f[0], 10, 64)
		hi, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return payloadPart{}, errors.New("LO and HI must be whole numbers")
		}
		return randomRange('I', lo, hi, 0)
	case "float":
		f := strings.Split(args, ":")
		if len(f) != 3 {
			return payloadPart{}, errors.New("write %{float:LO:HI:D}, like %{float:-10:40.5:2}")
		}
		dec, err := strconv.Atoi(f[2])
		if err != nil || dec < 0 || dec > 9 {
			return payloadPart{}, errors.New("D, the decimals, must be 0 to 9")
		}
		scale := math.Pow10(dec)
		lo, err1 := strconv.ParseFloat(f[0], 64)
		hi, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || math.IsNaN(lo) || math.IsNaN(hi) {
			return payloadPart{}, errors.New("LO and HI must be numbers")
		}
		if math.Abs(lo*scale) > maxRandomInt || math.Abs(hi*scale) > maxRandomInt {
			return payloadPart{}, fmt.Errorf("LO and HI times 10^D must be within ±%g", float64(maxRandomInt))
		}
		return randomRange('F', int64(math.Round(lo*scale)), int64(math.Round(hi*scale)), dec)
	case "choice":
		if args == "" && !strings.Contains(spec, ":") {
			return payloadPart{}, errors.New("write %{choice:A|B|C}")
		}
		c := strings.Split(args, "|")
		if len(c) > maxChoices {
			return payloadPart{}, fmt.Errorf("%d choices, at most %d", len(c), maxChoices)
		}
		return payloadPart{verb: 'C', choices: c, hi: int64(len(c))}, nil
	case "hex":
		n, err := strconv.Atoi(args)
		if err != nil || n < 1 || n > maxHexDigits {
			return payloadPart{}, fmt.Errorf("write %%{hex:N} with N from 1 to %d digits", maxHexDigits)
		}
		return payloadPart{verb: 'X', hi: int64(n)}, nil
	}
	return payloadPart{}, fmt.Errorf("unknown kind %q (known: int, float, choice, hex)", kind)
}

func randomRange(verb byte, lo, hi int64, dec int) (payloadPart, error) {
	if lo > hi {
		return payloadPart{}, errors.New("LO must not exceed HI")
	}
	if lo < -maxRandomInt || hi > maxRandomInt {
		return payloadPart{}, fmt.Errorf("LO and HI must be within ±%g", float64(maxRandomInt))
	}
	return payloadPart{verb: verb, lo: lo, hi: hi, dec: dec}, nil
}

// maxLen bounds the bytes a hole renders (0 for %c and %u: the client's).
func (p payloadPart) maxLen() int {
	switch p.verb {
	case 'i', 's', 't', 'T', 'h', 'X':
		return int(p.hi)
	case 'I':
		return max(len(strconv.FormatInt(p.lo, 10)), len(strconv.FormatInt(p.hi, 10)))
	case 'F':
		return max(scaledLen(p.lo, p.dec), scaledLen(p.hi, p.dec))
	case 'C':
		n := 0
		for _, c := range p.choices {
			n = max(n, len(c))
		}
		return n
	}
	return 0
}

// String returns the template as written.
func (t *PayloadTemplate) String() string {
	if t == nil {
		return ""
	}
	return t.raw
}

// MarshalText writes the template as written, for the plan's JSON echo.
func (t *PayloadTemplate) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a template as MarshalText wrote it.
func (t *PayloadTemplate) UnmarshalText(b []byte) error {
	v, err := ParsePayloadTemplate(string(b))
	if err != nil {
		return err
	}
	*t = *v
	return nil
}

// Uses reports whether the template contains the placeholder verb
// (c, u, i, s, t, T or h).
func (t *PayloadTemplate) Uses(verb byte) bool {
	for _, p := range t.parts {
		if p.verb == verb {
			return true
		}
	}
	return false
}

// HeaderAt is the byte offset of %h in every rendering, -1 without it.
func (t *PayloadTemplate) HeaderAt() int { return t.headerAt }

// HeaderPrefix is the literal text before %h, which a payload carrying
// its header in a field starts with.
func (t *PayloadTemplate) HeaderPrefix() string {
	if t.headerAt <= 0 {
		return ""
	}
	return t.parts[0].lit
}

// MaxLen bounds the length of a rendering for the client values v.
func (t *PayloadTemplate) MaxLen(v TemplateVars) int {
	return t.maxLenBound(len(v.ClientID), len(v.Username))
}

// maxLenBound is MaxLen for client ids and user names of at most
// idLen and userLen bytes, for load-time checks.
func (t *PayloadTemplate) maxLenBound(idLen, userLen int) int {
	return t.fixedLen + t.maxVar + t.ids*idLen + t.users*userLen
}

// PayloadKey identifies one message for the values a template draws:
// the plan's seed, the publisher number, the sequence (1-based) and the
// intended send time (Unix ns), which the measurement header carries.
type PayloadKey struct {
	Seed     uint64
	Pub      uint32
	Seq      uint32
	Intended int64
}

// Header returns the 16-byte measurement header of the message.
func (k PayloadKey) Header() [HeaderSize]byte {
	var h [HeaderSize]byte
	binary.BigEndian.PutUint32(h[0:4], k.Pub)
	binary.BigEndian.PutUint32(h[4:8], k.Seq)
	binary.BigEndian.PutUint64(h[8:16], uint64(k.Intended))
	return h
}

const hexDigits = "0123456789abcdef"

// AppendHeaderHex appends the message's header as HeaderHexLen lowercase
// hex digits, as %h and the header user property carry it.
func AppendHeaderHex(dst []byte, k PayloadKey) []byte {
	h := k.Header()
	for _, b := range h {
		dst = append(dst, hexDigits[b>>4], hexDigits[b&15])
	}
	return dst
}

// ParseHeaderHex reads a header written by AppendHeaderHex; ok is false
// unless hx is exactly HeaderHexLen lowercase hex digits.
func ParseHeaderHex(hx []byte) (pub, seq uint32, intended int64, ok bool) {
	if len(hx) != HeaderHexLen {
		return 0, 0, 0, false
	}
	var h [HeaderSize]byte
	for i := range h {
		a, okA := unhex(hx[2*i])
		b, okB := unhex(hx[2*i+1])
		if !okA || !okB {
			return 0, 0, 0, false
		}
		h[i] = a<<4 | b
	}
	return binary.BigEndian.Uint32(h[0:4]), binary.BigEndian.Uint32(h[4:8]), int64(binary.BigEndian.Uint64(h[8:16])), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// payloadDomain separates the payload's random streams from the Poisson
// arrivals' (poisson.go), which hash the same seed.
const payloadDomain = 0x7061796c6f6164 // "payload"

// draw is the r-th random 64-bit value of a hole of message k.
func draw(k PayloadKey, hole, r uint64) uint64 {
	h := mixIn(mixIn(mixIn(mixIn(k.Seed, payloadDomain), uint64(k.Pub)), uint64(k.Seq)), hole)
	return fmix64(h + (r+1)*0x9e3779b97f4a7c15)
}

// below maps a random value to [0, n) (Lemire's multiply-high; its bias,
// under n/2⁶⁴, is far below anything a test measures).
func below(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// AppendRender appends the payload of message k of the client with values
// v. It allocates nothing when dst has MaxLen(v) bytes of room.
func (t *PayloadTemplate) AppendRender(dst []byte, v TemplateVars, k PayloadKey) []byte {
	for i := range t.parts {
		p := &t.parts[i]
		switch p.verb {
		case 0:
			dst = append(dst, p.lit...)
		case 'c':
			dst = append(dst, v.ClientID...)
		case 'u':
			dst = append(dst, v.Username...)
		case 'C':
			dst = append(dst, p.choice(k)...)
		default:
			dst = p.appendValue(dst, v, k)
		}
	}
	return dst
}

// Matches reports whether payload is exactly message k's rendering for
// the client with values v, comparing it part by part: the receiver's
// content check, which needs no buffer of the payload's size and
// allocates nothing.
func (t *PayloadTemplate) Matches(payload []byte, v TemplateVars, k PayloadKey) bool {
	for i := range t.parts {
		p := &t.parts[i]
		var want string
		switch p.verb {
		case 0:
			want = p.lit
		case 'c':
			want = v.ClientID
		case 'u':
			want = v.Username
		case 'C':
			want = p.choice(k)
		default:
			// Every other hole renders at most maxHoleLen bytes.
			var buf [maxHoleLen]byte
			b := p.appendValue(buf[:0], v, k)
			if len(payload) < len(b) || string(payload[:len(b)]) != string(b) {
				return false
			}
			payload = payload[len(b):]
			continue
		}
		if len(payload) < len(want) || string(payload[:len(want)]) != want {
			return false
		}
		payload = payload[len(want):]
	}
	return len(payload) == 0
}

// maxHoleLen bounds what appendValue renders: 64 hex digits at most.
const maxHoleLen = maxHexDigits

// choice is the text a %{choice} hole picks for message k.
func (p *payloadPart) choice(k PayloadKey) string {
	return p.choices[below(draw(k, p.hole, 0), uint64(len(p.choices)))]
}

// appendValue appends a hole that renders a value (not a literal, a
// client's text or a choice).
func (p *payloadPart) appendValue(dst []byte, v TemplateVars, k PayloadKey) []byte {
	switch p.verb {
	case 'i':
		return strconv.AppendInt(dst, int64(v.N), 10)
	case 's':
		return strconv.AppendUint(dst, uint64(k.Seq), 10)
	case 't':
		return strconv.AppendInt(dst, k.Intended/int64(time.Millisecond), 10)
	case 'T':
		return time.Unix(0, k.Intended).UTC().AppendFormat(dst, rfc3339Milli)
	case 'h':
		return AppendHeaderHex(dst, k)
	case 'I':
		return strconv.AppendInt(dst, p.lo+int64(below(draw(k, p.hole, 0), uint64(p.hi-p.lo)+1)), 10)
	case 'F':
		return appendScaled(dst, p.lo+int64(below(draw(k, p.hole, 0), uint64(p.hi-p.lo)+1)), p.dec)
	case 'X':
		for i := 0; i < int(p.hi); i += 16 {
			x := draw(k, p.hole, uint64(i/16))
			for j := i; j < min(i+16, int(p.hi)); j++ {
				dst = append(dst, hexDigits[x>>60])
				x <<= 4
			}
		}
	}
	return dst
}

// scaledLen is the length of appendScaled's output for v: its sign, the
// integer part (at least one digit), and the point and decimals. It grows
// with |v|, so a range's ends bound every value between them.
func scaledLen(v int64, dec int) int {
	n := 0
	if v < 0 {
		n, v = 1, -v
	}
	for range dec {
		v /= 10
	}
	n += len(strconv.FormatInt(v, 10))
	if dec > 0 {
		n += 1 + dec
	}
	return n
}

// appendScaled appends v/10^dec with exactly dec decimals.
func appendScaled(dst []byte, v int64, dec int) []byte {
	if dec == 0 {
		return strconv.AppendInt(dst, v, 10)
	}
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	pow := int64(1)
	for range dec {
		pow *= 10
	}
	dst = strconv.AppendInt(dst, v/pow, 10)
	dst = append(dst, '.')
	frac := v % pow
	for p := pow / 10; p > 1 && frac < p; p /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, frac, 10)
}
