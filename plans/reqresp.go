package plans

// Request/response (MQTT 5, 5.0 §4.10), the shape of command and control:
// a requesting group publishes requests that carry a response topic and
// correlation data; a responder group's clients subscribe to their
// command topic and answer each request they receive on its response
// topic, copying its correlation data.
//
//	groups:
//	  - name: devices
//	    count: 20
//	    respond: {topic: "cmd/%i", qos: 1}
//	  - name: backend
//	    count: 20
//	    publish:
//	      topic: "cmd/%i"
//	      response_topic: "resp/%c"
//	      every: 100ms
//
// Who answers whom is the topics' business, as for any delivery: the
// requester i above reaches responder i (1:1 pairs by %i), a request on a
// topic that several responders' filters match is answered by each of
// them. Requests are ordinary messages (expected deliveries, latency,
// loss), and ClientPublish.ExpectedResponses is the number of answers one
// request implies, computed with the other expectations, so explain counts
// requests and answers exactly. The answer's round trip (rtt.*) runs from
// the request's intended send time to the answer's arrival at the
// requester.

import (
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/internal/yamlnode"
	"go.yaml.in/yaml/v3"
)

// Respond is a group's `respond:` section: its clients are responders.
type Respond struct {
	// Topic is the command topic filter each client subscribes to.
	Topic Template `json:"topic"`
	// QoS is the command subscription's QoS; answers go at QoS 0, so a
	// responder answers from its reader without waiting for acks.
	QoS byte `json:"qos"`
	// Size is the answer's payload size: the responder's number, then
	// padding.
	Size int `json:"size"`
	Pos  Pos `json:"-"`
}

// defResponseTimeout is the default response_timeout, cut to the drain
// when that is shorter (an answer is waited for no longer than drain).
const defResponseTimeout = 5 * time.Second

// requestFields decodes a publish section's request keys.
func (l *loader) requestFields(s *keySection, pub *Publish) {
	if r, ok := s.template("response_topic", "cui"); ok {
		pub.ResponseTopic = r.t
	}
	te, hasTimeout := s.get("response_timeout")
	s.duration("response_timeout", &pub.ResponseTimeout, durationOpts{positive: true})
	if hasTimeout && pub.ResponseTopic.IsZero() {
		l.errorf(te.key, te.path, "is only for requests: set response_topic too, or drop it")
	}
}

// requestResponse decodes a group's respond: section and checks what
// request/response needs of the group (MQTT 5, no subscribe: beside
// respond:), returning the templates to check with the group's others.
func (l *loader) requestResponse(s *keySection, g *Group) []templateUse {
	var refs []templateUse
	if pe, ok := s.get("publish"); ok && g.Publish != nil && !g.Publish.ResponseTopic.IsZero() {
		if e, ok := childEntry(l, pe, "response_topic"); ok {
			r, _ := l.templateAt(e, "cui")
			r.kind = "topic"
			refs = append(refs, r)
			if g.Protocol < 5 {
				l.errorf(e.key, e.path, "is MQTT 5 request/response, but the group speaks %s: set protocol: 5", protocolName(g.Protocol))
			}
		}
	}
	e, ok := s.get("respond")
	if !ok || yamlnode.IsNull(e.val) {
		return refs
	}
	if se, both := s.get("subscribe"); both {
		w := laterEntry(se, e)
		l.errorf(w.key, w.path, "set either subscribe or respond, not both: a responder's only subscription is its command topic")
	}
	if g.Protocol < 5 {
		l.errorf(e.key, e.path, "is MQTT 5 request/response, but the group speaks %s: set protocol: 5", protocolName(g.Protocol))
	}
	rp := &Respond{Size: HeaderSize, Pos: l.pos(e.val)}
	if e.val.Kind != yaml.MappingNode {
		l.errorf(e.val, e.path, "must be a mapping with keys like topic, qos, size; got %s", describeNode(e.val))
		return refs
	}
	rs := l.section(e.path, e.val, respondKeys, false)
	if r, ok := rs.template("topic", "cui"); ok {
		rp.Topic = r.t
		r.kind = "filter"
		if strings.HasPrefix(r.t.Literal(), "$share/") {
			// A pool of responders sharing the commands would answer a
			// request delivered twice from two members, which the
			// per-responder answer streams cannot tell from two answers.
			l.errorf(r.e.val, r.e.path, "a shared subscription ($share/) as the command topic is not supported yet: give each responder its own filter")
		} else {
			refs = append(refs, r)
		}
	} else if _, present := rs.get("topic"); !present {
		l.errorf(e.val, e.path, "missing \"topic\": say which command topic filter the responders subscribe to")
	}
	rs.qos("qos", &rp.QoS)
	rs.size("size", &rp.Size, answerMinSize, maxPayloadSize, " (the responder's number)")
	g.Respond = rp
	return refs
}

// childEntry finds key in the mapping of entry e, with its path.
func childEntry(l *loader, e keyEntry, key string) (keyEntry, bool) {
	if e.val.Kind != yaml.MappingNode {
		return keyEntry{}, false
	}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		if k := e.val.Content[i]; k.Value == key {
			v := e.val.Content[i+1]
			return keyEntry{key: k, val: v, path: l.at(e.path+"."+key, v)}, true
		}
	}
	return keyEntry{}, false
}

// checkRequests defaults each request's response_timeout (5s, or the
// drain when that is shorter) and refuses one longer than the drain: the
// run stops waiting for answers when drain ends, so a last request's
// answer could never be judged on time. Load and Compile both call it.
func checkRequests(p *Plan) Errors {
	var errs Errors
	for i := range p.Groups {
		pub := p.Groups[i].Publish
		if pub == nil || pub.ResponseTopic.IsZero() {
			continue
		}
		path := "groups[" + strconv.Itoa(i) + "].publish.response_timeout"
		switch {
		case p.Drain <= 0:
			errs = append(errs, &Error{Pos: pub.Pos, Path: "drain", Msg: "must be more than 0s when a group sends requests (response_topic): answers arrive after the last request"})
		case pub.ResponseTimeout == 0:
			pub.ResponseTimeout = min(defResponseTimeout, p.Drain)
		case pub.ResponseTimeout > p.Drain:
			errs = append(errs, &Error{Pos: pub.Pos, Path: path, Msg: "is " + pub.ResponseTimeout.String() + ", longer than drain (" + p.Drain.String() + "): the run stops waiting for answers when drain ends; raise drain or lower the timeout"})
		}
	}
	return errs
}

// sendsRequests says whether a group of p sends requests.
func sendsRequests(p *Plan) bool {
	for i := range p.Groups {
		if pub := p.Groups[i].Publish; pub != nil && !pub.ResponseTopic.IsZero() {
			return true
		}
	}
	return false
}

// subscribes says whether the group's clients subscribe: ordinary
// subscriptions, a responder's command topic or a requester's response
// topic. Such groups connect first, and every SUBACK is in before the
// first request.
func subscribes(g *Group) bool { return subscriptionCount(g) > 0 }

// subscriptionCount is the number of subscriptions each client of g makes.
func subscriptionCount(g *Group) int {
	n := len(g.Subscribe)
	if g.Respond != nil {
		n++
	}
	if g.Publish != nil && !g.Publish.ResponseTopic.IsZero() {
		n++
	}
	return n
}

// appendRequestSubscriptions appends one client's request/response
// subscriptions: the responder's command filter (at its QoS) and the
// requester's response topic (at QoS 0, the QoS answers are sent at).
func appendRequestSubscriptions(subs []ClientSubscription, g *Group, vars TemplateVars) []ClientSubscription {
	if g.Respond != nil {
		subs = append(subs, ClientSubscription{Filter: g.Respond.Topic.Expand(vars), QoS: g.Respond.QoS, ShareKey: -1, Respond: true})
	}
	if g.Publish != nil && !g.Publish.ResponseTopic.IsZero() {
		subs = append(subs, ClientSubscription{Filter: g.Publish.ResponseTopic.Expand(vars), ShareKey: -1, Response: true})
	}
	return subs
}

// expandResponseTopic is a requester's response topic, "" for plain
// publishing.
func expandResponseTopic(pub *Publish, vars TemplateVars) string {
	if pub.ResponseTopic.IsZero() {
		return ""
	}
	return pub.ResponseTopic.Expand(vars)
}

// responseTimeout is the answers' deadline of a requester (0 for plain
// publishing): as set, or the default for a plan built in Go.
func responseTimeout(pub *Publish, drain time.Duration) time.Duration {
	switch {
	case pub.ResponseTopic.IsZero():
		return 0
	case pub.ResponseTimeout > 0:
		return pub.ResponseTimeout
	}
	return min(defResponseTimeout, drain)
}

// expectResponses sets each requester's ExpectedResponses from its
// expected deliveries: one answer per delivery to a responder group
// (whose only subscription is its command topic). A requester that no
// responder hears is a plan error rather than a run of certain timeouts.
func expectResponses(prog *Program) Errors {
	var errs Errors
	reported := make([]bool, len(prog.Groups))
	for gi, g := range prog.Plan.Groups {
		if g.Respond != nil && strings.HasPrefix(g.Respond.Topic.Literal(), "$share/") {
			errs = append(errs, &Error{Pos: g.Respond.Pos, Path: "groups[" + strconv.Itoa(gi) + "].respond.topic", Msg: "a shared subscription ($share/) as the command topic is not supported yet: give each responder its own filter"})
		}
		if g.Respond != nil && len(g.Subscribe) > 0 {
			errs = append(errs, &Error{Pos: g.Pos, Path: "groups[" + strconv.Itoa(gi) + "]", Msg: "set either subscribe or respond, not both: a responder's only subscription is its command topic"})
		}
	}
	for i := range prog.Clients {
		c := &prog.Clients[i]
		pub := c.Publish
		if pub == nil || pub.ResponseTopic == "" {
			continue
		}
		pub.ExpectedResponses = 0
		for gi, n := range pub.ExpectedByGroup {
			if prog.Plan.Groups[gi].Respond != nil {
				pub.ExpectedResponses += n
			}
		}
		if pub.ExpectedResponses == 0 && !reported[c.Group] {
			reported[c.Group] = true
			g := &prog.Plan.Groups[c.Group]
			errs = append(errs, &Error{Pos: g.Publish.Pos, Path: "groups[" + strconv.Itoa(c.Group) + "].publish.topic",
				Msg: "no responder's respond.topic matches " + strconv.Quote(pub.Topic) + " (client " + c.ID + "): its requests would go unanswered"})
		}
	}
	return errs
}

// answerMinSize is the smallest answer payload: the responder's publisher
// number (uint32), which the requester keeps its answer streams by.
const answerMinSize = 4
