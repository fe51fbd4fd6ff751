package plans

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Stages: a plan's publish rate over time as a list of steps and ramps, in
// k6's ramping-arrival-rate semantics (issue 10). Each stage moves the rate
// linearly from the previous stage's target to its own over its duration
// (the first from 0, or from the warmup's rate when the plan has a warmup);
// a stage of duration 0s is a jump, and repeating a target holds it. The
// stages together are the measured (steady) phase: the plan's Duration is
// their total, and they replace ramp and duration.
//
// A stage's rate or every applies to every publishing group, exactly as
// publish.rate (the whole group's messages per second) and publish.every
// (one client's interval) do, and the groups then give neither. The stages
// compile onto one shared Profile per group (schedule.go): one segment per
// stage, nothing per message.

// Stage is one step of the plan's `stages:` timeline.
type Stage struct {
	// Name labels the stage in explain (default: its index). It is letters,
	// digits, _ and - and not only digits, so that it can never be read as
	// another stage's index.
	Name string `json:"name"`
	// Duration is how long the stage lasts; 0 makes it a jump to its target.
	Duration time.Duration `json:"duration"`
	// Rate is each publishing group's target at the end of the stage, in
	// messages per second for the whole group; 0 stops publishing.
	Rate float64 `json:"rate,omitempty"`
	// Every is the target as one client's interval instead of Rate.
	Every time.Duration `json:"every,omitempty"`
	// Clients is, by group name, how many of the group's clients are
	// connected at the end of the stage (stage_clients.go): fleets grow
	// and shrink, and a broker's cost is in its connections too.
	Clients map[string]int `json:"clients,omitempty"`
	Pos     Pos            `json:"-"`
	// clientsAt is where each of Clients is written, for errors.
	clientsAt map[string]clientsKey
}

// perClient is the stage's target rate for one client of a group of n
// clients, in messages per second.
func (s *Stage) perClient(n int) float64 {
	if s.Every > 0 {
		return float64(time.Second) / float64(s.Every)
	}
	if n <= 0 {
		return 0
	}
	return s.Rate / float64(n)
}

// maxStages bounds a plan's stages: each becomes one segment of every
// publishing group's profile, and explain counts each stage's messages
// client by client (see maxStageWork).
const maxStages = 256

// maxStageWork bounds stages × publishing clients: compiling a staged plan
// counts every stage's messages for every publishing client, exactly
// (Schedule.Messages, O(log stages) each).
const maxStageWork = 8_000_000

// stageNumericRE matches a name that is only digits: an index, never a name.
var stageNumericRE = regexp.MustCompile(`^[0-9]+$`)

// stages decodes the plan's `stages:` list. It returns the stages, their
// total duration, and false when the list could not be read.
func (l *loader) stages(e keyEntry) ([]Stage, bool) {
	if e.val.Kind != yaml.SequenceNode {
		l.errorf(e.val, e.path, "must be a list of stages (each item like - {duration: 30s, rate: 1000/s}), got %s", describeNode(e.val))
		return nil, false
	}
	if len(e.val.Content) == 0 {
		l.errorf(e.val, e.path, "must list at least one stage")
		return nil, false
	}
	if len(e.val.Content) > maxStages {
		l.errorf(e.val, e.path, "has %d stages, more than the limit of %d", len(e.val.Content), maxStages)
		return nil, false
	}
	known := stageKeys
	names := map[string]string{}
	out := make([]Stage, 0, len(e.val.Content))
	positive, ok := false, true
	for i, item := range e.val.Content {
		path := l.at(planIndexPath(e.path, i), item)
		st := Stage{Name: strconv.Itoa(i), Pos: l.pos(item)}
		if item.Kind != yaml.MappingNode {
			l.errorf(item, path, "must be a stage mapping (name, duration, rate or every), got %s", describeNode(item))
			ok = false
			continue
		}
		s := l.section(path, item, known, false)
		if ne, has := s.get("name"); has {
			if v, vok := l.value(ne, "a stage name"); vok {
				switch {
				case v == "":
					l.errorf(ne.val, ne.path, "must not be empty (leave it out to use the stage's index, %d)", i)
				case !loadGroupNameRE.MatchString(v):
					l.errorf(ne.val, ne.path, "must be letters, digits, _ and - only, got %s", gotValue(v))
				case stageNumericRE.MatchString(v):
					l.errorf(ne.val, ne.path, "must not be only digits, got %s: a number names a stage by its index", gotValue(v))
				default:
					if first, dup := names[v]; dup {
						l.errorf(ne.val, ne.path, "duplicate stage name %q (already used by %s)", v, first)
					} else {
						names[v] = path
					}
					st.Name = v
				}
			}
		}
		if !s.duration("duration", &st.Duration, durationOpts{max: maxTimeline}) {
			l.errorf(item, path, "missing \"duration\": say how long the stage lasts, like duration: 30s (0s jumps to the stage's rate)")
		}
		ee, hasEvery := s.get("every")
		re, hasRate := s.get("rate")
		switch {
		case hasEvery && hasRate:
			w := laterEntry(ee, re)
			l.errorf(w.key, w.path, "set either every or rate, not both: every is one client's interval, rate is each group's messages per second")
		case hasEvery:
			s.duration("every", &st.Every, durationOpts{positive: true, max: maxTimeline})
		case hasRate:
			s.rate("rate", &st.Rate, true)
		default:
			l.errorf(item, path, "missing \"rate\" or \"every\": say the stage's target, like rate: 1000/s (each publishing group) or every: 1s (each client); rate: 0/s stops")
		}
		if ce, has := s.get("clients"); has {
			l.loadStageClients(ce, &st)
		}
		if st.Rate > 0 || st.Every > 0 {
			positive = true
		}
		out = append(out, st)
	}
	if ok && !positive {
		l.errorf(e.val, e.path, "every stage has rate 0: nothing would be published")
	}
	return out, true
}

// StagesTotal is the stages' total duration, saturating at math.MaxInt64.
func StagesTotal(stages []Stage) time.Duration {
	var sum time.Duration
	for _, s := range stages {
		sum = satAdd(sum, s.Duration)
	}
	return sum
}

// checkStageWork refuses a staged plan whose exact per-stage counts would
// take too long to compute (see maxStageWork).
func checkStageWork(p *Plan) Errors {
	if len(p.Stages) == 0 {
		return nil
	}
	pubs := 0
	for _, g := range p.Groups {
		if g.Publish != nil {
			pubs += g.Count
		}
	}
	if work := int64(pubs) * int64(len(p.Stages)); work > maxStageWork {
		return Errors{{Pos: p.Stages[0].Pos, Path: "stages", Msg: fmt.Sprintf(
			"%s stages × %s publishing clients is %s, more than the limit of %s",
			thousands(len(p.Stages)), thousands(pubs), thousands64(work), thousands(maxStageWork))}}
	}
	return nil
}

func thousands64(n int64) string {
	if n <= math.MaxInt {
		return thousands(int(n))
	}
	return strconv.FormatInt(n, 10)
}

// stageProfile compiles the stages for one publishing group of n clients:
// the profile every client of the group shares, and the interval at the
// group's peak per-client rate, which the profile's rates are fractions of.
// A warmup (publishing at the first stage's target rate, not measured)
// comes first, as a segment of Stage -1; the first stage then starts from
// that rate. It returns a nil profile when no stage gives the group a rate
// (the loader refuses such plans).
func stageProfile(stages []Stage, warmup time.Duration, n int) (*Profile, time.Duration, error) {
	peak := 0.0
	for i := range stages {
		peak = max(peak, stages[i].perClient(n))
	}
	if !(peak > 0) {
		return nil, 0, nil
	}
	interval := time.Duration(float64(time.Second) / peak)
	if interval <= 0 {
		interval = 1
	}
	unit := interval.Seconds() // messages per second → multiples of 1/interval
	segs := make([]Segment, 0, len(stages)+1)
	from := 0.0
	if warmup > 0 {
		from = stages[0].perClient(n) * unit
		segs = append(segs, Segment{Duration: warmup, From: from, To: from, Stage: -1})
	}
	for i := range stages {
		to := stages[i].perClient(n) * unit
		segs = append(segs, Segment{Duration: stages[i].Duration, From: from, To: to, Stage: i})
		from = to
	}
	prof, err := NewProfile(interval, segs)
	return prof, interval, err
}

// StagePlan is one stage as compiled: when it runs and what it publishes,
// counted exactly from every client's schedule.
type StagePlan struct {
	// Index and Name identify the stage (Name is its index when unnamed).
	Index int
	Name  string
	// Start is the stage's offset from the start of warmup; it lasts Duration.
	Start, Duration time.Duration
	// Groups is the rate of each publishing group across the stage, in plan
	// order of the publishing groups.
	Groups []StageGroupRate
	// Messages and Deliveries are exact: the messages intended in
	// [Start, Start+Duration) and the deliveries they imply.
	Messages, Deliveries int64
}

// StageGroupRate is one group's rate across a stage, in messages per
// second for the whole group, at the stage's start and end.
type StageGroupRate struct {
	Group    int
	From, To float64
}

// planStages counts each stage's messages and deliveries from every
// publishing client's schedule: O(stages × publishers × log stages).
func planStages(prog *Program) []StagePlan {
	p := prog.Plan
	if len(p.Stages) == 0 {
		return nil
	}
	out := make([]StagePlan, len(p.Stages))
	start := prog.Warmup
	for i := range p.Stages {
		st := &p.Stages[i]
		sp := &out[i]
		sp.Index, sp.Name, sp.Start, sp.Duration = i, st.Name, start, st.Duration
		for gi := range p.Groups {
			g := &p.Groups[gi]
			if g.Publish == nil {
				continue
			}
			gs := stagesFor(p, g)
			from := 0.0
			switch {
			case i > 0:
				from = gs[i-1].perClient(g.Count) * float64(g.Count)
			case prog.Warmup > 0:
				from = gs[i].perClient(g.Count) * float64(g.Count)
			}
			sp.Groups = append(sp.Groups, StageGroupRate{Group: gi, From: from, To: gs[i].perClient(g.Count) * float64(g.Count)})
		}
		end := satAdd(start, st.Duration)
		for ci := range prog.Clients {
			pub := prog.Clients[ci].Publish
			if pub == nil {
				continue
			}
			// Sends, not Schedule.Messages: what a churning client's
			// offline windows leave out is not sent, as the phases count.
			n := int64(prog.Sends(&prog.Clients[ci], start, end))
			sp.Messages = satAdd(sp.Messages, n)
			sp.Deliveries = satAdd(sp.Deliveries, satMul(n, int64(pub.Expected)))
		}
		start = end
	}
	return out
}

// decodeStages decodes `stages:` into p: stages replace ramp and duration,
// and p.Duration becomes their total, the measured phase.
func (l *loader) decodeStages(top *keySection, p *Plan, e keyEntry) {
	for _, key := range []string{"ramp", "duration"} {
		if ke, ok := top.get(key); ok {
			l.errorf(ke.key, ke.path, "not with stages: the stages are the plan's timeline (a stage from 0 ramps; their total is the measured phase)")
		}
	}
	p.Ramp = 0
	stages, ok := l.stages(e)
	if !ok {
		p.Duration = 0
		return
	}
	p.Stages = stages
	p.Duration = StagesTotal(stages)
	if p.Duration <= 0 {
		l.errorf(e.val, e.path, "the stages last 0s in total: give at least one a duration")
	}
}
