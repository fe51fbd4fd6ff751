package plans

import (
	"math/bits"
	"time"

	"go.yaml.in/yaml/v3"
)

// Start delays: `publish.start_delay: {min, max}` holds each client of a
// group back from publishing by its own delay, drawn uniformly from
// [min, max) (exactly min when max equals it), so that a fleet does not
// start in step: emqtt-bench's --min-random-wait/--max-random-wait, which
// wait that long (a uniform draw) before each publisher's first message.
//
// The client's whole timetable moves by its delay: message k is intended
// at delay + what the schedule would give without it, and what then falls
// past the end of publishing is not in the schedule (Schedule.Delay). The
// delay replaces the even stagger of uniform arrivals (client j of n
// shifted by j/n of the interval): the draws stagger the clients, and a
// client's messages follow its delay at the interval, as emqtt-bench's do.
//
// A delay is a pure function of (plan seed, client index): drawn from a
// SplitMix64 stream of its own (the node kind nodeStartDelay in the
// Poisson arrivals' key space, so the two never share draws), in integer
// nanoseconds, so explain, validate and the run see the same delays and a
// test can derive them.

// StartDelay is a group's start delay range (start_delay.go).
type StartDelay struct {
	// Min and Max bound each client's delay: drawn from [Min, Max), or
	// Min when they are equal.
	Min time.Duration `json:"min"`
	Max time.Duration `json:"max"`
	Pos Pos           `json:"-"`
}

// nodeStartDelay keys the start delay's draw (see the node kinds in
// poisson.go).
const nodeStartDelay = 16

// Draw is the delay of the client with the given index under seed.
func (d *StartDelay) Draw(seed uint64, client int) time.Duration {
	span := uint64(d.Max - d.Min)
	if d.Max <= d.Min {
		return d.Min
	}
	r := poissonArrivals{seed: seed, client: uint64(client)}.stream(nodeStartDelay, 0, 0)
	hi, _ := bits.Mul64(r.next(), span) // uniform in [0, span): the top word of x·span
	return d.Min + time.Duration(hi)
}

var startDelaySection = &planSection{
	name: "start_delay",
	doc:  "Each client of the group waits its own delay, drawn uniformly from [min, max) (seeded by the plan's seed), before its first message; its whole timetable moves by it, and replaces the even stagger of uniform arrivals (emqtt-bench's --min-random-wait/--max-random-wait). Not with burst or rate: max.",
	fields: []planField{
		{name: "min", kind: fieldDuration, max: int64(maxTimeline), doc: "The shortest delay (default 0s)."},
		{name: "max", kind: fieldDuration, required: true, max: int64(maxTimeline), doc: "The delays are below this (equal to min: every client waits exactly min)."},
	},
}

var startDelayKeys = startDelaySection.keys()

// startDelay decodes `publish.start_delay:` into pub.
func (l *loader) startDelay(s *keySection, pub *Publish) {
	e, ok := s.get("start_delay")
	if !ok {
		return
	}
	if e.val.Kind != yaml.MappingNode {
		l.errorf(e.val, e.path, "must be a mapping like {min: 0s, max: 5s}, got %s", describeNode(e.val))
		return
	}
	switch {
	case pub.Burst != nil:
		l.errorf(e.key, e.path, "not with burst: a burst's messages share the burst's instant")
		return
	case pub.Max:
		l.errorf(e.key, e.path, "not with rate: max: a closed loop has no timetable to move")
		return
	}
	errs := len(l.errs)
	ks := l.section(e.path, e.val, startDelayKeys, false)
	d := &StartDelay{Pos: l.pos(e.val)}
	ks.duration("min", &d.Min, durationOpts{max: maxTimeline})
	if !ks.duration("max", &d.Max, durationOpts{max: maxTimeline}) {
		l.errorf(e.val, e.path, "missing \"max\": the delays are drawn below it, like {min: 0s, max: 5s}")
		return
	}
	if len(l.errs) > errs {
		return // min or max said what is wrong with it
	}
	if d.Max < d.Min {
		me, _ := ks.get("max")
		l.errorf(me.val, me.path, "must be at least min (%s), got %s", d.Min, d.Max)
		return
	}
	pub.StartDelay = d
}
