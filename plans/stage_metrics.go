package plans

import (
	"sort"
	"strconv"
	"time"
)

// Per-stage metrics (issue 10): a message belongs to the stage its
// intended send time falls in, so that `stages.<name>.*` judges what each
// stage's schedule asked for, whatever the broker made of it. The stage of
// a message is a pure function of its offset (StageOf), found by the
// publisher when it sends and by the receiver from the intended time the
// header carries: nothing is stored per message.

// StageOf returns the index of the stage whose window [Start,
// Start+Duration) holds off (an offset from the start of warmup), or -1
// when off is in no stage (warmup, drain, or a plan without stages). A
// stage of duration 0 holds nothing. It is O(log stages) and does not
// allocate.
func (p *Program) StageOf(off time.Duration) int {
	st := p.Stages
	i := sort.Search(len(st), func(i int) bool { return satAdd(st[i].Start, st[i].Duration) > off })
	if i == len(st) || off < st[i].Start {
		return -1
	}
	return i
}

// StageNames lists the plan's stage names in timeline order (an unnamed
// stage's name is its index), as thresholds and reports name them.
func StageNames(p *Plan) []string {
	if p == nil || len(p.Stages) == 0 {
		return nil
	}
	out := make([]string, len(p.Stages))
	for i := range p.Stages {
		out[i] = p.Stages[i].Name
		if out[i] == "" {
			out[i] = strconv.Itoa(i)
		}
	}
	return out
}
