package mqttc

import "fmt"

// ReasonCode is an MQTT 5 reason code (5.0 §2.4), as brokers send them in
// CONNACK, PUBACK, PUBREC, PUBCOMP, SUBACK and DISCONNECT. At MQTT 3.1.1 a
// SUBACK's return codes read the same way: the QoS granted, or 0x80 for a
// refusal (3.1.1 §3.9.3); its acknowledgements carry no code, which reads
// as 0, success.
type ReasonCode byte

// ReasonFailure is the first failure code: from 0x80 up a code says the
// broker refused what was asked (5.0 §2.4), below it succeeded.
const ReasonFailure ReasonCode = 0x80

// Failed reports whether the code is a refusal.
func (c ReasonCode) Failed() bool { return c >= ReasonFailure }

// String names the code with its number, as "packet too large (0x95)", so
// that a user can look it up either way.
func (c ReasonCode) String() string {
	if n, ok := reasonNames[c]; ok {
		return fmt.Sprintf("%s (0x%02X)", n, byte(c))
	}
	return fmt.Sprintf("reason code 0x%02X", byte(c))
}

// reasonNames are the MQTT 5 reason codes (the specification's table
// 2-6) that brokers send to a client. From 0x80 up each code has one
// meaning whatever the packet, so one table names them all; below it only
// the DISCONNECT codes are named, the others being successes nobody reads.
var reasonNames = map[ReasonCode]string{
	0x00: "normal disconnection",
	0x04: "disconnect with will message",
	0x80: "unspecified error",
	0x81: "malformed packet",
	0x82: "protocol error",
	0x83: "implementation specific error",
	0x84: "unsupported protocol version",
	0x85: "client identifier not valid",
	0x86: "bad user name or password",
	0x87: "not authorized",
	0x88: "server unavailable",
	0x89: "server busy",
	0x8A: "banned",
	0x8B: "server shutting down",
	0x8C: "bad authentication method",
	0x8D: "keep alive timeout",
	0x8E: "session taken over",
	0x8F: "topic filter invalid",
	0x90: "topic name invalid",
	0x91: "packet identifier in use",
	0x93: "receive maximum exceeded",
	0x94: "topic alias invalid",
	0x95: "packet too large",
	0x96: "message rate too high",
	0x97: "quota exceeded",
	0x98: "administrative action",
	0x99: "payload format invalid",
	0x9A: "retain not supported",
	0x9B: "QoS not supported",
	0x9C: "use another server",
	0x9D: "server moved",
	0x9E: "shared subscriptions not supported",
	0x9F: "connection rate exceeded",
	0xA0: "maximum connect time",
	0xA1: "subscription identifiers not supported",
	0xA2: "wildcard subscriptions not supported",
}

// connackReturn311 names the return codes of an MQTT 3.1/3.1.1 CONNACK
// (3.1.1 §3.2.2.3), which are not MQTT 5 reason codes: 1 to 5 are the
// refusals, anything else is unknown.
func connackReturn311(code byte) string {
	switch code {
	case 1:
		return "unacceptable protocol version"
	case 2:
		return "client identifier rejected"
	case 3:
		return "server unavailable"
	case 4:
		return "bad user name or password"
	case 5:
		return "not authorized"
	}
	return fmt.Sprintf("return code %d", code)
}
