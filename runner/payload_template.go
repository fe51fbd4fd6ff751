package runner

import (
	"bytes"
	"slices"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// Templated payloads, size distributions and header placements
// (plans/payload.go): the publisher renders each message into a reused
// buffer; the receiver finds the header where the publisher put it
// (prefix, MQTT 5 user property, or the template's %h field) and compares
// the delivery byte for byte with the same message rendered again from
// (seed, publisher, sequence, intended time), part by part, without a
// buffer (PayloadTemplate.Matches). Neither side allocates per message.

// payloadWriter is one publisher's reused payload and property buffers.
type payloadWriter struct {
	buf   []byte
	props []byte
}

func newPayloadWriter(pub *plans.ClientPublish) *payloadWriter {
	w := &payloadWriter{buf: make([]byte, pub.Size)}
	if pub.Header == plans.HeaderProperty {
		w.props = make([]byte, 0, 1+2+len(plans.HeaderPropertyName)+2+plans.HeaderHexLen)
	}
	return w
}

// fill writes message k's payload (and its properties, for header:
// property) and returns them; props is nil without properties.
func (w *payloadWriter) fill(pattern []byte, pc *plans.Client, k plans.PayloadKey) (payload, props []byte) {
	pub := pc.Publish
	if pub.Payload == nil {
		n := pub.Size
		if pub.Sizes != nil {
			n = pub.Sizes.Size(k)
		}
		payload = w.buf[:n]
		encodePayload(payload, pattern, k.Pub, k.Seq, k.Intended)
		return payload, nil
	}
	v := plans.TemplateVars{ClientID: pc.ID, Username: pc.Username, N: pc.N}
	b := w.buf[:0]
	switch pub.Header {
	case plans.HeaderPrefix, "":
		h := k.Header()
		b = append(b, h[:]...)
	case plans.HeaderProperty:
		var hx [plans.HeaderHexLen]byte
		w.props = mqttc.AppendUserProperty(w.props[:0], plans.HeaderPropertyName, plans.AppendHeaderHex(hx[:0], k))
		props = w.props
	}
	return pub.Payload.AppendRender(b, v, k), props
}

// headerPlace is where a receiver found a message's header.
type headerPlace uint8

const (
	placeNone headerPlace = iota
	placePrefix
	placeProperty
	placeField
	// placeBroken: the payload carries the header user property or
	// starts with a header field's text, so it claims to be one of the
	// run's messages, but the header there does not read.
	placeBroken
)

// fieldHeader is one header: field template's literal start and the
// offset of its %h, which every rendering shares.
type fieldHeader struct {
	prefix []byte
	at     int
}

// payloadChecks is what the receivers need to find and check templated
// payloads, built once per run from the program.
type payloadChecks struct {
	seed uint64
	// property: some publisher carries its header in a user property.
	property bool
	fields   []fieldHeader
}

func newPayloadChecks(prog *plans.Program) payloadChecks {
	pc := payloadChecks{seed: prog.Plan.Seed}
	for _, g := range prog.Plan.Groups {
		pub := g.Publish
		if pub == nil {
			continue
		}
		switch pub.Header {
		case plans.HeaderProperty:
			pc.property = true
		case plans.HeaderField:
			if pub.Payload == nil {
				continue
			}
			f := fieldHeader{prefix: []byte(pub.Payload.HeaderPrefix()), at: pub.Payload.HeaderAt()}
			dup := false
			for _, o := range pc.fields {
				dup = dup || o.at == f.at && bytes.Equal(o.prefix, f.prefix)
			}
			if !dup {
				pc.fields = append(pc.fields, f)
			}
		}
	}
	// The longest text first: a payload whose template's text another
	// one's begins with is read at its own %h.
	slices.SortStableFunc(pc.fields, func(a, b fieldHeader) int { return len(b.prefix) - len(a.prefix) })
	return pc
}

// findHeader reads a delivery's header from wherever a publisher of the
// run may have put it: a user property, a template's %h field, or the
// 16-byte prefix.
func (p *payloadChecks) findHeader(props, payload []byte) (header, headerPlace) {
	if p.property && len(props) > 0 {
		if v, ok := mqttc.UserProperty(props, plans.HeaderPropertyName); ok {
			if pub, seq, at, ok := plans.ParseHeaderHex(v); ok {
				return header{pub, seq, at}, placeProperty
			}
			return header{}, placeBroken
		}
	}
	claimed := false
	for _, f := range p.fields {
		if len(payload) >= f.at+plans.HeaderHexLen && bytes.HasPrefix(payload, f.prefix) {
			if pub, seq, at, ok := plans.ParseHeaderHex(payload[f.at : f.at+plans.HeaderHexLen]); ok {
				return header{pub, seq, at}, placeField
			}
			// A %h at offset 0 has no text to recognise its payloads
			// by; a binary header never starts with a hex digit (its
			// first byte is a publisher number's high byte, 0), so a
			// payload that does is a broken field.
			claimed = claimed || len(f.prefix) > 0 || payload[0] != 0
		}
	}
	if claimed {
		return header{}, placeBroken
	}
	if h, ok := decodeHeader(payload); ok {
		return h, placePrefix
	}
	return header{}, placeNone
}

// claimsRun reports whether a delivery whose header names no message of
// the run still claims to be one (header property or field text): it is
// then a corrupted message, not foreign traffic. A binary prefix cannot
// tell the two apart.
func claimsRun(place headerPlace) bool {
	return place == placeBroken || place == placeField || place == placeProperty
}

// contentOK checks a delivery against what its publisher sent: the
// header where the publisher's group puts it, and every other byte.
// A template is compared part by part (PayloadTemplate.Matches), so the
// receiver needs no buffer of the payload's size.
func (p *payloadChecks) contentOK(pattern, payload []byte, h header, place headerPlace, from *plans.Client) bool {
	pub := from.Publish
	k := plans.PayloadKey{Seed: p.seed, Pub: h.pub, Seq: h.seq, Intended: h.intended}
	if pub.Payload == nil {
		if place != placePrefix {
			return false
		}
		size := pub.Size
		if pub.Sizes != nil {
			size = pub.Sizes.Size(k)
		}
		return paddingOK(payload, pattern, h, size)
	}
	want := placePrefix
	switch pub.Header {
	case plans.HeaderProperty:
		want = placeProperty
	case plans.HeaderField:
		want = placeField
	}
	if place != want {
		return false
	}
	if place == placePrefix {
		payload = payload[plans.HeaderSize:]
	}
	v := plans.TemplateVars{ClientID: from.ID, Username: from.Username, N: from.N}
	return pub.Payload.Matches(payload, v, k)
}
