package plans

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A group's own stages (publish.stages, issue 10): the group's targets
// over the plan's one timeline. Every stage list of a plan (the top-level
// stages: and each group's publish.stages) must have the same names and
// durations, so that stages.<name> is one window whatever group is read;
// only the targets differ. A group with its own list takes its rates
// from it; one without takes the plan's stages: (which then must exist).
// A plan without a top-level stages: takes its timeline from the groups'
// lists, and then every publishing group gives one.

// groupStagePath is a group's publish.stages path, for errors.
func groupStagePath(gi int) string { return "groups[" + strconv.Itoa(gi) + "].publish.stages" }

// stagesFor is the stage list that gives group g its publish rate: its
// own, or the plan's.
func stagesFor(p *Plan, g *Group) []Stage {
	if g.Publish != nil && len(g.Publish.Stages) > 0 {
		return g.Publish.Stages
	}
	return p.Stages
}

// publishStages decodes a group's publish.stages into pub; has says the
// key is there (then every, rate and burst are not).
func (l *loader) publishStages(s *keySection, pub *Publish) (has bool) {
	e, has := s.get("stages")
	if !has {
		return false
	}
	if stages, ok := l.stages(e); ok {
		pub.Stages = stages
	}
	return true
}

// groupStages checks the groups' publish.stages against each other and
// against the plan's stages:, and gives a plan whose timeline comes from
// the groups alone its p.Stages (names and durations; the targets are the
// groups') and its Duration. It returns true when it did so, standing for
// the duration the plan then must not give.
func (l *loader) groupStages(top *keySection, p *Plan, staged bool) bool {
	ref, refPath := p.Stages, "stages"
	first := -1
	for gi := range p.Groups {
		g := &p.Groups[gi]
		if g.Publish == nil || len(g.Publish.Stages) == 0 {
			continue
		}
		if first < 0 {
			first = gi
			if !staged {
				ref, refPath = g.Publish.Stages, groupStagePath(gi)
				continue
			}
		}
		if d, at := stageListDiff(g.Publish.Stages, ref, refPath); d != "" {
			l.errs = append(l.errs, &Error{Pos: g.Publish.Stages[at].Pos, Path: planIndexPath(groupStagePath(gi), at), Msg: d +
				": every stage list of a plan has the same names and durations (one timeline, so that stages.<name> is one window); only the rates differ"})
		}
	}
	if first < 0 || staged {
		return false
	}
	// The timeline comes from the groups: every publishing group gives its
	// own targets, and the plan neither ramp nor duration.
	for gi := range p.Groups {
		g := &p.Groups[gi]
		if g.Publish != nil && len(g.Publish.Stages) == 0 {
			l.errs = append(l.errs, &Error{Pos: g.Publish.Pos, Path: "groups[" + strconv.Itoa(gi) + "].publish", Msg: fmt.Sprintf(
				"needs its own stages: %s gives the plan its timeline, and a group without publish.stages takes its rate from a top-level stages:, which the plan does not have; copy the list with this group's rates", groupStagePath(first))})
		}
	}
	for _, key := range []string{"ramp", "duration"} {
		if ke, ok := top.get(key); ok {
			l.errorf(ke.key, ke.path, "not with stages (%s): the stages are the plan's timeline (a stage from 0 ramps; their total is the measured phase)", groupStagePath(first))
		}
	}
	timeline := make([]Stage, len(ref))
	for i, st := range ref {
		timeline[i] = Stage{Name: st.Name, Duration: st.Duration, Pos: st.Pos}
	}
	p.Stages, p.Ramp = timeline, 0
	p.Duration = StagesTotal(timeline)
	return true
}

// stageListDiff says how stages differ from ref (at refPath) in names or
// durations, or "" when they do not, and the index of the first stage
// that differs (the last one when only the lengths do).
func stageListDiff(stages, ref []Stage, refPath string) (string, int) {
	if len(stages) != len(ref) {
		return fmt.Sprintf("has %d stages, %s has %d", len(stages), refPath, len(ref)), min(len(stages), len(ref)+1) - 1
	}
	var diffs []string
	first := 0
	for i := range stages {
		a, b := &stages[i], &ref[i]
		if a.Name != b.Name || a.Duration != b.Duration {
			if diffs == nil {
				first = i
			}
			diffs = append(diffs, fmt.Sprintf("stage %d is %s here, %s in %s", i, stageLabel(a), stageLabel(b), refPath))
		}
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "; "), first
}

// stageLabel is a stage's name and duration, for messages.
func stageLabel(s *Stage) string {
	return strconv.Quote(s.Name) + " for " + fmtStageDuration(s.Duration)
}

func fmtStageDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.String()
}
