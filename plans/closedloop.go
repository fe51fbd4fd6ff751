package plans

import "go.yaml.in/yaml/v3"

// This file is the closed loop (publish.rate: max, publish.inflight): the
// one publishing mode whose send times are not a timetable. Each client
// publishes its next message as soon as its window allows, for the
// plan's duration, so the number of messages is known only after the
// run; everything else (clients, topics, expected deliveries per
// message, phases) stays a pure function of the plan, and explain says
// which figures it cannot know.
//
// The window: with QoS 1/2 a client keeps at most Inflight publishes
// awaiting their acknowledgement (emqtt-bench's -F/--inflight), and
// publishes the next as soon as one is acknowledged. QoS 0 has nothing to
// acknowledge: a client writes each message as soon as the previous write
// returned, its socket's send buffer being the window, so inflight is
// refused there rather than silently meaning nothing.

// RateMax is the publish.rate value that asks for the closed loop.
const RateMax = "max"

// MaxInflight bounds publish.inflight: the lean client's own in-flight
// window (internal/mqttc keeps at most 256 QoS 1/2 publishes in flight).
const MaxInflight = 256

// defInflight is publish.inflight's default with rate: max, emqtt-bench's.
const defInflight = 1

// ClosedLoop reports whether the publishing is the closed loop.
func (p *Publish) ClosedLoop() bool { return p != nil && p.Max }

// rateMax reads publish.rate: max into pub; false when the value is
// something else (a rate, read by keySection.rate).
func (l *loader) rateMax(e keyEntry, pub *Publish) bool {
	if e.val.Kind != yaml.ScalarNode || e.val.Value != RateMax {
		return false
	}
	pub.Max = true
	return true
}

// inflight reads publish.inflight and checks it against the rest of the
// publish section: it is the closed loop's window, and QoS 0 has none. It
// refuses rate: max with request/response (publish.response_topic, read
// before it) as not supported yet.
func (l *loader) inflight(s *keySection, pub *Publish) {
	e, present := s.get("inflight")
	if present {
		s.integer("inflight", &pub.Inflight, 1, MaxInflight)
	}
	switch {
	case present && !pub.Max:
		l.errorf(e.key, e.path, "inflight is the window of the closed loop: set rate: max with it (an open-loop publisher's sends follow its schedule, not its acknowledgements)")
		pub.Inflight = 0
	case present && pub.QoS == 0:
		l.errorf(e.key, e.path, "inflight counts QoS 1/2 publishes awaiting their acknowledgement, and QoS 0 has none: leave it out (with rate: max a QoS 0 client writes each message as soon as the previous write returned) or set qos: 1")
		pub.Inflight = 0
	case pub.Max && pub.QoS > 0 && pub.Inflight == 0:
		pub.Inflight = defInflight
	}
	if re, ok := s.get("rate"); ok && pub.Max && !pub.ResponseTopic.IsZero() {
		l.errorf(re.val, re.path, "max with response_topic is not supported yet: a request's round trip and its timeout are measured from its intended send time, which a closed loop does not have; give a rate")
	}
}

// closedLoopDuration refuses a plan without duration in which a group
// publishes with rate: max: the closed loop has no schedule to derive the
// measured phase's length from, so the duration is its only bound.
// It reports whether it refused the plan.
func (l *loader) closedLoopDuration(root *yaml.Node, p *Plan) bool {
	for i, g := range p.Groups {
		if g.Publish.ClosedLoop() {
			l.errorf(root, "", "missing \"duration\": groups[%d] (%s) publishes with rate: max, as fast as the broker allows, which only a duration bounds: add one, like duration: 30s", i, g.Name)
			return true
		}
	}
	return false
}

// ClosedLoop reports whether any group publishes with rate: max: the
// program's message counts are then known only after the run.
func (p *Program) ClosedLoop() bool {
	for i := range p.Groups {
		if p.Groups[i].Max {
			return true
		}
	}
	return false
}
