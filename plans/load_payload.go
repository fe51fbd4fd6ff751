package plans

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/mqplan/mqplan/internal/yamlnode"
)

// Loading publish.payload, publish.header and a size distribution in
// publish.size (payload.go, payload_size.go).

// Bounds of a size distribution.
const (
	maxSizeChoices = 64      // weighted sizes in one list
	maxSizeWeight  = 1 << 20 // one weight; the sum stays far from overflow
)

// payloadUse keeps where a group's payload fields were written, for the
// checks that need the whole group (payloadChecks) or plan.
type payloadUse struct {
	payload, header, size keyEntry
	hasPayload, hasHeader bool
}

// publishPayload decodes publish.payload, publish.header and
// publish.size into pub.
func (l *loader) publishPayload(s *keySection, pub *Publish) payloadUse {
	var u payloadUse
	if e, ok := s.get("payload"); ok {
		u.payload, u.hasPayload = e, true
		if e.val.Kind == yaml.MappingNode || e.val.Kind == yaml.SequenceNode {
			// {"id": "%i"} unquoted is a YAML flow mapping, not text.
			l.errorf(e.val, e.path, "is a YAML %s, not text: quote the payload template, e.g. payload: '{\"device\": \"%%c\", \"seq\": %%s}'", map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list"}[e.val.Kind])
		} else if v, _, ok := l.text(e, "a template string"); ok {
			if i := strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' }); i >= 0 {
				c, _ := utf8.DecodeRuneInString(v[i:])
				l.errorf(e.val, e.path, "holds the control character %U at byte %d: a payload template is text (newline and tab allowed)", c, i)
			} else if t, err := ParsePayloadTemplate(v); err != nil {
				l.errorf(e.val, e.path, "%v", err)
			} else {
				pub.Payload = t
			}
		}
	}
	if e, ok := s.get("header"); ok {
		u.header, u.hasHeader = e, true
		if v, ok := l.value(e, "prefix, property or field"); ok {
			switch v {
			case HeaderPrefix, HeaderProperty, HeaderField:
				pub.Header = v
			default:
				l.errorf(e.val, e.path, "must be prefix (16 binary bytes before the payload), property (an MQTT 5 user property) or field (the template's %%h), got %s", gotValue(v))
			}
		}
	}
	if e, ok := s.get("size"); ok {
		u.size = e
		switch e.val.Kind {
		case yaml.MappingNode:
			pub.Sizes = l.sizeRange(e)
		case yaml.SequenceNode:
			pub.Sizes = l.sizeChoices(e)
		default:
			s.size("size", &pub.Size, HeaderSize, maxPayloadSize, " (the measurement header)")
		}
		if pub.Sizes != nil {
			_, pub.Size, _ = pub.Sizes.Bounds()
		}
	}
	return u
}

// sizeOf reads one size of a distribution at e.
func (l *loader) sizeOf(e keyEntry) (int, bool) {
	v, ok := l.value(e, wantSize)
	if !ok {
		return 0, false
	}
	n, err := ParseSize(v)
	switch {
	case err != nil:
		l.errorf(e.val, e.path, "must be %s, got %s", wantSize, gotValue(v))
	case n < HeaderSize:
		l.errorf(e.val, e.path, "must be at least %d bytes (the measurement header), got %s", HeaderSize, strings.TrimSpace(v))
	case n > maxPayloadSize:
		l.errorf(e.val, e.path, "must be at most %s, got %s", formatByteSize(maxPayloadSize), strings.TrimSpace(v))
	default:
		return int(n), true
	}
	return 0, false
}

// sizeRange reads size: {min, max}, a uniform size per message.
func (l *loader) sizeRange(e keyEntry) *SizeDist {
	s := l.section(e.path, e.val, sizeRangeKeys, false)
	lo, hasLo := s.get("min")
	hi, hasHi := s.get("max")
	if !hasLo || !hasHi {
		l.errorf(e.val, e.path, "a size range needs both min and max, like {min: 100B, max: 10KB}")
		return nil
	}
	a, okA := l.sizeOf(lo)
	b, okB := l.sizeOf(hi)
	if !okA || !okB {
		return nil
	}
	if a > b {
		l.errorf(hi.val, hi.path, "must not be below min (%d bytes)", a)
		return nil
	}
	return &SizeDist{Min: a, Max: b}
}

// sizeChoices reads size: [{size, weight}, ...], weighted sizes.
func (l *loader) sizeChoices(e keyEntry) *SizeDist {
	if len(e.val.Content) == 0 || len(e.val.Content) > maxSizeChoices {
		l.errorf(e.val, e.path, "must list 1 to %d {size, weight} choices, got %d", maxSizeChoices, len(e.val.Content))
		return nil
	}
	d := &SizeDist{}
	ok := true
	for i, item := range e.val.Content {
		path := l.at(planIndexPath(e.path, i), item)
		if item.Kind != yaml.MappingNode {
			l.errorf(item, path, "must be a {size, weight} mapping, got %s", describeNode(item))
			ok = false
			continue
		}
		s := l.section(path, item, sizeKeys, false)
		c := SizeChoice{Weight: 1}
		se, has := s.get("size")
		if !has {
			l.errorf(item, path, "missing \"size\"")
			ok = false
			continue
		}
		n, good := l.sizeOf(se)
		ok = ok && good
		c.Size = n
		if s.integer("weight", &c.Weight, 1, maxSizeWeight); c.Weight < 1 {
			ok = false
		}
		d.Choices = append(d.Choices, c)
	}
	if !ok {
		return nil
	}
	return d
}

// checkPayload checks a publishing group's payload fields against each
// other and the group: the header needs a place, %u a user name,
// header: property MQTT 5, and the rendering must fit a packet.
func (l *loader) checkPayload(g *Group, u payloadUse) {
	pub := g.Publish
	if pub == nil {
		return
	}
	t := pub.Payload
	if !pub.ResponseTopic.IsZero() {
		// Requests (response_topic) carry a fixed-size binary payload:
		// templates and drawn sizes are not wired into that path yet.
		switch {
		case u.hasPayload:
			l.errorf(u.payload.val, u.payload.path, "not supported yet with response_topic: a request's payload is binary, of a fixed size")
			return
		case pub.Sizes != nil:
			l.errorf(u.size.val, u.size.path, "a drawn size is not supported yet with response_topic: a request's payload has a fixed size")
			return
		case u.hasHeader && pub.Header != HeaderPrefix:
			l.errorf(u.header.val, u.header.path, "header: %s is not supported yet with response_topic: a request carries its header as a prefix", pub.Header)
			return
		}
	}
	defaulted := false
	if pub.Header == "" && !u.hasHeader && t != nil {
		// A template is text a backend parses: on MQTT 5 the header goes
		// in a user property, so the payload is the template's output
		// alone; MQTT 3 has no properties, so the binary prefix stays.
		switch {
		case t.HeaderAt() >= 0:
			pub.Header = HeaderField
		case g.Protocol == 5:
			pub.Header, defaulted = HeaderProperty, true
			l.defaultProperty = append(l.defaultProperty, l.groupIndex)
		default:
			pub.Header = HeaderPrefix
		}
	}
	if t == nil {
		if pub.Header == HeaderProperty || pub.Header == HeaderField {
			l.errorf(u.header.val, u.header.path, "header: %s needs a payload template (payload:); a binary payload carries its header as a prefix", pub.Header)
		}
		return
	}
	if u.size.val != nil {
		l.errorf(u.size.val, u.size.path, "size does not apply with a payload template: the payload is the template's output")
	}
	pub.Size, pub.Sizes = 0, nil
	switch {
	case pub.Header == HeaderField && t.HeaderAt() < 0:
		l.errorf(u.header.val, u.header.path, "header: field needs %%h in the payload template, where the header goes")
	case pub.Header != HeaderField && pub.Header != "" && t.HeaderAt() >= 0:
		l.errorf(u.payload.val, u.payload.path, "%%h places the header in the template, but header is %s: leave header out or set it to field", pub.Header)
	case pub.Header == HeaderProperty && g.Protocol != 5:
		l.errorf(u.header.val, u.header.path, "header: property needs MQTT 5 (the group's protocol is %d, which has no user properties): set protocol: 5, or put the header in the template with %%h and header: field", g.Protocol)
	}
	if t.Uses('u') && g.Username.IsZero() {
		l.errorf(u.payload.val, u.payload.path, "uses %%u, but the group has no username")
	}
	userLen := g.Username.maxLen(0, 0)
	idLen := g.ClientID.maxLen(0, userLen)
	if g.ClientID.IsZero() {
		idLen = len("mqplan-") + 64 + len(g.Name) + 2 + maxDigits // the default id, a run id of 64 bytes at most
	}
	n := t.maxLenBound(min(idLen, maxTemplateBytes), min(userLen, maxTemplateBytes))
	if pub.Header == HeaderPrefix || defaulted { // a defaulted property may fall back to prefix
		n += HeaderSize
	}
	if n > maxPayloadSize {
		l.errorf(u.payload.val, u.payload.path, "renders up to %s bytes, more than the %s a payload may have", thousands(n), formatByteSize(maxPayloadSize))
	}
}

// checkHeaderProtocols refuses a plan whose header: property messages
// would reach an MQTT 3 subscriber, which receives no properties and so
// could not read the header: every subscribing group must speak MQTT 5.
// A property the plan did not ask for (the MQTT 5 default) falls back to
// prefix instead, as a plan without header: always had it.
func (l *loader) checkHeaderProtocols(groups []Group, items []*yaml.Node, path string) {
	if len(l.defaultProperty) > 0 && slices.ContainsFunc(groups, func(g Group) bool { return len(g.Subscribe) > 0 && g.Protocol != 5 }) {
		for _, i := range l.defaultProperty {
			if i < len(groups) && groups[i].Publish != nil {
				groups[i].Publish.Header = HeaderPrefix
			}
		}
	}
	l.defaultProperty = nil
	uses := false
	for _, g := range groups {
		uses = uses || g.Publish != nil && g.Publish.Header == HeaderProperty
	}
	if !uses {
		return
	}
	for i, g := range groups {
		if len(g.Subscribe) > 0 && g.Protocol != 5 && i < len(items) {
			l.errorf(items[i], l.at(planIndexPath(path, i), items[i]), "subscribes with protocol %d, but a group publishes with header: property: MQTT 3 deliveries carry no user property, so the header would be lost; give this group protocol: 5", g.Protocol)
		}
	}
}

// seed reads the plan's top-level seed.
func (l *loader) seed(top *keySection, p *Plan) {
	p.Seed = DefaultSeed
	e, ok := top.get("seed")
	if !ok || yamlnode.IsNull(e.val) {
		return
	}
	n := int(DefaultSeed)
	if top.integer("seed", &n, 0, maxSeed) {
		p.Seed = uint64(n)
	}
}

// maxSeed keeps the seed a whole number every YAML and JSON reader
// reads exactly.
const maxSeed = 1<<53 - 1
