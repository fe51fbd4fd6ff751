package plans

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// churn decodes a group's lifetime, churn and away (see sessions.go): nil
// when the group gives neither lifetime nor churn. The checks against the
// rest of the plan are checkChurn's, once the whole plan is read.
func (l *loader) churn(s *keySection, path string) *Churn {
	le, hasLife := s.get("lifetime")
	ce, hasChurn := s.get("churn")
	ae, hasAway := s.get("away")
	c := &Churn{}
	switch {
	case hasLife && hasChurn:
		w := laterEntry(le, ce)
		l.errorf(w.key, w.path, "set either lifetime or churn, not both")
		return nil
	case hasLife:
		c.Pos, c.Path = l.pos(le.key), le.path
		if le.val.Kind == yaml.MappingNode {
			c.Lifetime, c.LifetimeMax = l.lifetimeRange(le)
		} else {
			s.duration("lifetime", &c.Lifetime, durationOpts{positive: true, max: maxTimeline})
		}
		if c.Lifetime <= 0 {
			return nil
		}
	case hasChurn:
		c.Pos, c.Path = l.pos(ce.key), ce.path
		s.rate("churn", &c.Rate, false)
		if c.Rate <= 0 {
			return nil
		}
	default:
		if hasAway {
			l.errorf(ae.key, ae.path, "is the time a churning client stays disconnected: set lifetime or churn with it")
		}
		return nil
	}
	s.duration("away", &c.Away, durationOpts{max: maxTimeline})
	return c
}

// lifetimeRange reads lifetime: {min, max}, a session length drawn
// uniformly per session (sessions_random.go); zeros when it is refused.
func (l *loader) lifetimeRange(e keyEntry) (lo, hi time.Duration) {
	s := l.section(e.path, e.val, lifeRangeKeys, false)
	_, hasMin := s.get("min")
	xe, hasMax := s.get("max")
	if !hasMin || !hasMax {
		l.errorf(e.val, e.path, "a lifetime range needs both min and max, like {min: 10s, max: 60s}")
		return 0, 0
	}
	opts := durationOpts{positive: true, max: maxTimeline}
	s.duration("min", &lo, opts)
	s.duration("max", &hi, opts)
	if lo <= 0 || hi <= 0 {
		return 0, 0
	}
	if hi < lo {
		l.errorf(xe.val, xe.path, "must not be below min (%s)", lo)
		return 0, 0
	}
	return lo, hi
}

// churnDoc is the catalogue's text for the three keys.
const (
	lifetimeDoc = "Each client's session lasts this long, then it sends DISCONNECT and reconnects, same client id, away later; the first session is cut so that the group's clients leave in turn. {min, max} draws each session's length uniformly, seeded by seed and the client (explain prints the timetable). Set lifetime or churn, not both."
	churnDoc    = "This many of the group's clients leave and reconnect per second (50/s), round-robin so each churns equally. Set lifetime or churn, not both."
	awayDoc     = "With lifetime or churn: how long a client stays disconnected between sessions (default 0s). A publisher away skips the messages due meanwhile."
)
