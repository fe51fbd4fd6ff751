package mqttc

import (
	"encoding/binary"
	"errors"
	"io"
	"time"
)

// This file is the wire codec: packet types, the flag bits of fixed
// headers and of CONNECT, variable byte integers, and the encoders of the
// packets mqplan writes itself (every packet at MQTT 3.1 and 3.1.1, and
// PUBLISH and the 4-byte acknowledgements at every version). MQTT 5's
// CONNECT and SUBSCRIBE, with their properties, are encoded by paho.golang's
// packets package (see conn.go). Section numbers refer to the MQTT 3.1.1
// (OASIS, 2014) and 5.0 (OASIS, 2019) specifications; the 3.1.1 layout of a
// packet is the 3.1 one except where a comment says otherwise.

// MQTT control packet types: the high nibble of a packet's first byte
// (3.1.1 §2.2.1, 5.0 §2.1.2).
const (
	TypeConnect    = 1
	TypeConnack    = 2
	TypePublish    = 3
	TypePuback     = 4
	TypePubrec     = 5
	TypePubrel     = 6
	TypePubcomp    = 7
	TypeSubscribe  = 8
	TypeSuback     = 9
	TypePingreq    = 12
	TypePingresp   = 13
	TypeDisconnect = 14
	TypeAuth       = 15
)

// The flag bits of a PUBLISH's first byte (3.1.1 §3.3.1, 5.0 §3.3.1):
// DUP, QoS in bits 1-2, RETAIN.
const (
	PublishDup      = 0x08
	PublishQoSShift = 1
	PublishQoSMask  = 0x03 << PublishQoSShift
	PublishRetain   = 0x01
)

// FlagsRequired is the fixed flag nibble 0010 of PUBREL, SUBSCRIBE and
// UNSUBSCRIBE (3.1.1 §2.2.2): a broker closes a connection that sends
// them with any other.
const FlagsRequired = 0x02

// The connect flags byte (3.1.1 §3.1.2.3, 5.0 §3.1.2.3). Bit 0 is
// reserved and must be 0.
const (
	ConnectCleanStart   = 0x02 // CleanSession in 3.1/3.1.1
	ConnectWill         = 0x04
	ConnectWillQoSShift = 3 // the will's QoS, bits 3-4
	ConnectWillRetain   = 0x20
	ConnectPassword     = 0x40
	ConnectUsername     = 0x80
)

// ConnackSessionPresent is bit 0 of a CONNACK's acknowledge flags (3.1.1
// §3.2.2.2, 5.0 §3.2.2.1.1): the broker kept the client's session. MQTT
// 3.1 has no such flag (the byte is reserved, always 0).
const ConnackSessionPresent = 0x01

// The protocol levels of CONNECT (3.1.1 §3.1.2.2), which mqplan also uses
// to say which version a connection speaks.
const (
	Version31  = 3
	Version311 = 4
	Version5   = 5
)

// maxPacketSize is the largest packet mqplan accepts from a broker.
const maxPacketSize = 256 << 20

// protocolName names a protocol level for messages.
func protocolName(v byte) string {
	switch v {
	case Version31:
		return "3.1"
	case Version311:
		return "3.1.1"
	}
	return "5"
}

// The bytes of a variable byte integer: seven bits of the number, and a
// flag saying another byte follows.
const (
	vbiDigit = 0x7f
	vbiMore  = 0x80
)

// ReadVBI reads an MQTT variable byte integer (3.1.1 §2.2.3, 5.0 §1.5.5):
// 7 bits a byte, least significant first, the top bit set on every byte
// but the last; 4 bytes at most.
func ReadVBI(r io.ByteReader) (int, error) {
	v, mul := 0, 1
	for i := 0; i < 4; i++ {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		v += int(b&vbiDigit) * mul
		if b&vbiMore == 0 {
			return v, nil
		}
		mul <<= 7
	}
	return 0, errors.New("malformed remaining length")
}

// VBIAt decodes the variable byte integer at b[i:]: its value and its
// length in bytes, and false when b ends first or it is longer than 4.
func VBIAt(b []byte, i int) (v, n int, ok bool) {
	mul := 1
	for n < 4 && i+n < len(b) {
		d := b[i+n]
		v += int(d&vbiDigit) * mul
		n++
		if d&vbiMore == 0 {
			return v, n, true
		}
		mul <<= 7
	}
	return 0, 0, false
}

// AppendVBI appends n as an MQTT variable byte integer (see ReadVBI).
func AppendVBI(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= vbiMore
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// AppendString appends an MQTT UTF-8 string (3.1.1 §1.5.3): a 2-byte
// big-endian length, then the bytes.
func AppendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// appendBinary appends MQTT binary data (5.0 §1.5.6; the will message and
// password of 3.1.1 have the same layout): a 2-byte length, then the bytes.
func appendBinary(b, data []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

// appendPacket appends a whole packet: its first byte, the remaining
// length, then body.
func appendPacket(b []byte, b0 byte, body []byte) []byte {
	b = append(b, b0)
	b = AppendVBI(b, len(body))
	return append(b, body...)
}

// appendConnect311 appends an MQTT 3.1 (version Version31) or 3.1.1
// CONNECT (3.1.1 §3.1):
//
//	byte 0     0x10 (CONNECT, no flags)
//	1..4       remaining length (VBI)
//	2+n        protocol name: "MQTT" (3.1.1) or "MQIsdp" (3.1)
//	1          protocol level: 4 or 3
//	1          connect flags: USERNAME 0x80 | PASSWORD 0x40 |
//	           WILL_RETAIN 0x20 | WILL_QOS<<3 | WILL 0x04 | CLEAN 0x02
//	2          keepalive in seconds
//	payload    client id, [will topic, will message], [username], [password]
//	           each a 2-byte length and its bytes, present as the flags say
func appendConnect311(b []byte, version byte, o Options) []byte {
	name, level := "MQTT", byte(Version311)
	if version == Version31 {
		name, level = "MQIsdp", Version31
	}
	var flags byte
	if o.CleanStart {
		flags |= ConnectCleanStart
	}
	if w := o.Will; w != nil {
		flags |= ConnectWill | w.QoS<<ConnectWillQoSShift
		if w.Retain {
			flags |= ConnectWillRetain
		}
	}
	if o.Username != "" {
		flags |= ConnectUsername
	}
	if len(o.Password) > 0 {
		flags |= ConnectPassword
	}
	body := AppendString(nil, name)
	body = append(body, level, flags)
	body = binary.BigEndian.AppendUint16(body, uint16(o.Keepalive/time.Second))
	body = AppendString(body, o.ClientID)
	if w := o.Will; w != nil {
		body = AppendString(body, w.Topic)
		body = appendBinary(body, w.Payload)
	}
	if o.Username != "" {
		body = AppendString(body, o.Username)
	}
	if len(o.Password) > 0 {
		body = appendBinary(body, o.Password)
	}
	return appendPacket(b, TypeConnect<<4, body)
}

// appendSubscribe311 appends an MQTT 3.1/3.1.1 SUBSCRIBE (3.1.1 §3.8):
//
//	byte 0     0x82 (SUBSCRIBE, flags 0010)
//	1..4       remaining length (VBI)
//	2          packet id
//	per filter its 2-byte length and bytes, then one byte: the QoS asked
//
// The MQTT 5 subscription options (no local, retain as published, retain
// handling) have no place here: 3.1.1 reserves those bits.
func appendSubscribe311(b []byte, id uint16, subs []Subscription) []byte {
	body := binary.BigEndian.AppendUint16(nil, id)
	for _, s := range subs {
		body = AppendString(body, s.Filter)
		body = append(body, s.QoS)
	}
	return appendPacket(b, TypeSubscribe<<4|FlagsRequired, body)
}

// appendPublish appends one PUBLISH (3.1.1 §3.3, 5.0 §3.3) without
// properties. It does not allocate when b has room.
func appendPublish(b []byte, version byte, topic string, qos byte, retain, dup bool, id uint16, payload []byte) []byte {
	return appendPublishProps(b, version, topic, qos, retain, dup, id, payload, Request[string]{})
}

// Request is the MQTT 5 request/response pair a PUBLISH may carry (5.0
// §4.10): the topic the receiver should answer on and the correlation
// data it should copy into its answer. The zero value carries neither.
// T is string for a topic the caller holds as text (a requester's
// expanded template) and []byte for one read off the wire (a
// responder's answer), so neither side converts, which would allocate.
type Request[T string | []byte] struct {
	ResponseTopic T
	Correlation   []byte
	// Props are further MQTT 5 properties, already encoded (such as
	// AppendUserProperty's), written after the two above: the runner's
	// header user property (PublishProps).
	Props []byte
}

// appendPublishProps appends one PUBLISH with the request properties of
// r when it has any (MQTT 5 only: they are dropped below 5, which has no
// properties). It does not allocate when b has room.
//
//	byte 0     0x30 | DUP 0x08 | QoS<<1 | RETAIN 0x01
//	1..4       remaining length (VBI)
//	2+n        topic name
//	2          packet id (QoS 1 and 2 only)
//	VBI+props  MQTT 5 only: property length, then 0x08 response topic
//	           (string) and 0x09 correlation data (binary) when set
//	rest       payload
func appendPublishProps[T string | []byte](b []byte, version byte, topic T, qos byte, retain, dup bool, id uint16, payload []byte, r Request[T]) []byte {
	b0 := byte(TypePublish<<4) | qos<<PublishQoSShift
	if retain {
		b0 |= PublishRetain
	}
	if dup {
		b0 |= PublishDup
	}
	rl := 2 + len(topic) + len(payload)
	if qos > 0 {
		rl += 2
	}
	plen := 0
	if version >= Version5 {
		if len(r.ResponseTopic) > 0 {
			plen += 3 + len(r.ResponseTopic)
		}
		if len(r.Correlation) > 0 {
			plen += 3 + len(r.Correlation)
		}
		plen += len(r.Props)
		rl += vbiLen(plen) + plen
	}
	b = append(b, b0)
	b = AppendVBI(b, rl)
	b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
	b = append(b, topic...)
	if qos > 0 {
		b = binary.BigEndian.AppendUint16(b, id)
	}
	if version >= Version5 {
		b = AppendVBI(b, plen)
		if len(r.ResponseTopic) > 0 {
			b = append(b, PropResponseTopic)
			b = binary.BigEndian.AppendUint16(b, uint16(len(r.ResponseTopic)))
			b = append(b, r.ResponseTopic...)
		}
		if len(r.Correlation) > 0 {
			b = append(b, PropCorrelationData)
			b = appendBinary(b, r.Correlation)
		}
		b = append(b, r.Props...)
	}
	return append(b, payload...)
}

// vbiLen is the length of n's variable byte integer encoding.
func vbiLen(n int) int {
	switch {
	case n < 1<<7:
		return 1
	case n < 1<<14:
		return 2
	case n < 1<<21:
		return 3
	}
	return 4
}

// The MQTT 5 PUBLISH property identifiers (5.0 §3.3.2.3): the two of
// request/response that mqplan reads and writes, and the others a
// broker may forward, which publishRequest must step over.
const (
	PropPayloadFormat   = 0x01 // byte
	PropMessageExpiry   = 0x02 // four-byte integer
	PropContentType     = 0x03 // string
	PropResponseTopic   = 0x08 // string
	PropCorrelationData = 0x09 // binary data
	PropSubscriptionID  = 0x0B // variable byte integer
	PropTopicAlias      = 0x23 // two-byte integer
	PropUserProperty    = 0x26 // string pair
)

// nextProperty reads the PUBLISH property at props[i:] (MQTT 5
// §3.3.2.3), in place: its identifier, its value (a and, for a user
// property, the pair's key in a and value in b; nil for the fixed-size
// ones the callers skip) and the index of the next one. ok is false for a
// malformed list or a property a PUBLISH cannot carry. The one walker of
// a received PUBLISH's properties, so that every reader skips the same
// way and none allocates.
func nextProperty(props []byte, i int) (id byte, a, b []byte, next int, ok bool) {
	id = props[i]
	i++
	str := func(at int) ([]byte, int, bool) {
		if at+2 > len(props) {
			return nil, 0, false
		}
		end := at + 2 + int(binary.BigEndian.Uint16(props[at:]))
		if end > len(props) {
			return nil, 0, false
		}
		return props[at+2 : end], end, true
	}
	switch id {
	case PropPayloadFormat:
		i++
	case PropTopicAlias:
		i += 2
	case PropMessageExpiry:
		i += 4
	case PropSubscriptionID:
		_, n, vok := VBIAt(props, i)
		if !vok {
			return id, nil, nil, 0, false
		}
		i += n
	case PropContentType, PropResponseTopic, PropCorrelationData:
		if a, i, ok = str(i); !ok {
			return id, nil, nil, 0, false
		}
	case PropUserProperty:
		if a, i, ok = str(i); !ok {
			return id, nil, nil, 0, false
		}
		if b, i, ok = str(i); !ok {
			return id, nil, nil, 0, false
		}
	default:
		return id, nil, nil, 0, false
	}
	return id, a, b, i, i <= len(props)
}

// publishRequest finds the response topic and correlation data in the
// properties of a received PUBLISH, in place (the slices alias props). ok
// is false for malformed properties.
func publishRequest(props []byte) (r Request[[]byte], ok bool) {
	for i := 0; i < len(props); {
		id, a, _, next, good := nextProperty(props, i)
		if !good {
			return r, false
		}
		switch id {
		case PropResponseTopic:
			r.ResponseTopic = a
		case PropCorrelationData:
			r.Correlation = a
		}
		i = next
	}
	return r, true
}

// AppendUserProperty appends one MQTT 5 user property (a UTF-8 key and
// value pair) to a property list, for PublishProps.
func AppendUserProperty(b []byte, key string, value []byte) []byte {
	b = append(b, PropUserProperty)
	b = AppendString(b, key)
	return appendBinary(b, value)
}

// UserProperty finds the first user property named key in a PUBLISH's
// property list (as Handlers.DeliverProps gives it) and returns its value,
// a slice of props: it does not allocate. ok is false when there is none
// or the list is malformed.
func UserProperty(props []byte, key string) (value []byte, ok bool) {
	for i := 0; i < len(props); {
		id, k, v, next, good := nextProperty(props, i)
		if !good {
			return nil, false
		}
		if id == PropUserProperty && string(k) == key {
			return v, true
		}
		i = next
	}
	return nil, false
}

// appendAck appends a 4-byte PUBACK, PUBREC, PUBREL or PUBCOMP (3.1.1
// §3.4-3.7; in MQTT 5 the short form that means reason code 0, §3.4.2.1):
//
//	byte 0     type<<4, with flags 0010 for PUBREL
//	1          remaining length 2
//	2          packet id
func appendAck(b []byte, typ byte, id uint16) []byte {
	b0 := typ << 4
	if typ == TypePubrel {
		b0 |= FlagsRequired
	}
	return append(b, b0, 2, byte(id>>8), byte(id))
}

// The packets with no variable header, whole: PINGREQ (3.1.1 §3.12) and
// DISCONNECT (3.1.1 §3.14; in MQTT 5, §3.14.2.1, reason 0x00: normal).
var (
	pingreqPacket    = [2]byte{TypePingreq << 4, 0}
	disconnectPacket = [2]byte{TypeDisconnect << 4, 0}
)

// ackFields reads a PUBACK/PUBREC/PUBREL/PUBCOMP body: the packet id and
// the reason code (0 when left out, as MQTT 5 allows and 3.1.1 always does).
func ackFields(body []byte) (uint16, ReasonCode, error) {
	if len(body) < 2 {
		return 0, 0, errors.New("malformed acknowledgement")
	}
	reason := ReasonCode(0)
	if len(body) > 2 {
		reason = ReasonCode(body[2])
	}
	return binary.BigEndian.Uint16(body), reason, nil
}
