// Package brokerurl is the one table of the broker URL schemes mqplan
// accepts: for each, the canonical scheme it stands for, its default port,
// and whether it means TLS and WebSocket. The plan loader (which checks and
// writes out a plan's URLs) and the MQTT client (which dials them) both read
// it, so that a scheme is added or changed in one place.
//
// It owns the table and nothing else: it parses no URL, dials nothing and
// knows no plan, so that it stays a leaf any package can import (the plan
// loader must not pull in the client's network dependencies).
package brokerurl

import "strings"

// Scheme is one accepted URL scheme.
type Scheme struct {
	// Name is the scheme as written in a URL ("ssl").
	Name string
	// Canonical is the scheme Name is written out as ("mqtts"): the plan
	// loader normalises every URL to it, so the client has four schemes
	// to dial, not seven.
	Canonical string
	// DefaultPort is the port a URL without one connects to.
	DefaultPort string
	// TLS: the connection is encrypted (mqtts, wss and their aliases).
	TLS bool
	// WebSocket: MQTT runs in WebSocket binary frames (ws, wss).
	WebSocket bool
}

// DefaultWebSocketPath is the HTTP path of a ws:// or wss:// URL without
// one: the path brokers (Mosquitto, EMQX, HiveMQ, mochi) serve MQTT on.
const DefaultWebSocketPath = "/mqtt"

// schemes is the table, canonical schemes each followed by their aliases,
// in the order error messages list them. tcp is an alias of mqtt, ssl and
// tls of mqtts, as other MQTT tools accept them.
var schemes = [...]Scheme{
	{Name: "mqtt", Canonical: "mqtt", DefaultPort: "1883"},
	{Name: "tcp", Canonical: "mqtt", DefaultPort: "1883"},
	{Name: "mqtts", Canonical: "mqtts", DefaultPort: "8883", TLS: true},
	{Name: "ssl", Canonical: "mqtts", DefaultPort: "8883", TLS: true},
	{Name: "tls", Canonical: "mqtts", DefaultPort: "8883", TLS: true},
	{Name: "ws", Canonical: "ws", DefaultPort: "80", WebSocket: true},
	{Name: "wss", Canonical: "wss", DefaultPort: "443", TLS: true, WebSocket: true},
}

// Lookup returns the scheme called name (case-sensitive, as url.Parse
// lowercases schemes), and false for a scheme mqplan does not accept.
func Lookup(name string) (Scheme, bool) {
	for _, s := range schemes {
		if s.Name == name {
			return s, true
		}
	}
	return Scheme{}, false
}

// For returns the canonical scheme that has the given transport: mqtt,
// mqtts, ws or wss. Tools that build URLs from flags (the emqtt-bench
// emulation's -S and --ws) pick their scheme here rather than spelling it.
func For(tls, webSocket bool) Scheme {
	for _, s := range schemes {
		if s.Name == s.Canonical && s.TLS == tls && s.WebSocket == webSocket {
			return s
		}
	}
	panic("brokerurl: the table has no canonical scheme for every transport")
}

// Names lists every accepted scheme for a message, aliases included:
// "mqtt, tcp, mqtts, ssl, tls, ws or wss".
func Names() string {
	var names []string
	for _, s := range schemes {
		names = append(names, s.Name)
	}
	return orList(names)
}

// CanonicalNames lists the canonical schemes for a message:
// "mqtt, mqtts, ws or wss".
func CanonicalNames() string {
	var names []string
	for _, s := range schemes {
		if s.Name == s.Canonical {
			names = append(names, s.Name)
		}
	}
	return orList(names)
}

// All returns the table of schemes, in order, for what lists or matches
// them all (the plan schema's URL pattern).
func All() []Scheme {
	out := make([]Scheme, len(schemes))
	copy(out, schemes[:])
	return out
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
