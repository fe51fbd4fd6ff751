package plans

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// defDrainQuiet is drain's quiet when its mapping form leaves it out: a
// second without a new delivery, long against the gaps of a flowing
// stream (milliseconds) and short against a drain worth the mapping form.
const defDrainQuiet = time.Second

// drainDoc is the catalogue's text for drain.
const drainDoc = "After publishing stops, wait at most this long for deliveries, ending early once every expected delivery is in (default 5s). {max: 30s, quiet: 1s} keeps listening while deliveries arrive: it ends once every expected delivery is in, once no new delivery or acknowledgement has arrived for quiet (default 1s), or at max."

// drain decodes drain: a duration (wait at most this long), or the
// mapping {max, quiet} (wait at most max, and end once no new delivery
// has arrived for quiet). The plain form leaves p.DrainQuiet 0.
func (l *loader) drain(top *keySection, p *Plan) {
	e, ok := top.get("drain")
	if !ok {
		return
	}
	if e.val.Kind != yaml.MappingNode {
		top.duration("drain", &p.Drain, durationOpts{})
		return
	}
	s := l.section(e.path, e.val, drainKeys, false)
	if _, hasMax := s.get("max"); !hasMax {
		l.errorf(e.val, e.path, "the mapping form needs max, the longest drain may last, like {max: 30s, quiet: 1s}")
		return
	}
	var most time.Duration
	quiet := defDrainQuiet
	opts := durationOpts{positive: true} // max is bounded with the timeline (checkTimeline), quiet by max
	s.duration("max", &most, opts)
	hasQuiet := s.duration("quiet", &quiet, opts)
	if most <= 0 || quiet <= 0 {
		return
	}
	if quiet > most {
		if hasQuiet {
			qe, _ := s.get("quiet")
			l.errorf(qe.val, qe.path, "must not be above max (%s): drain would end at max before it could be quiet that long", most)
		} else {
			l.errorf(e.val, e.path, "max is %s, below the default quiet of %s: give a quiet no longer than max", most, defDrainQuiet)
		}
		return
	}
	p.Drain, p.DrainQuiet = most, quiet
}
