package runner

import (
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
)

// lateWindow is how close to the end of drain a stream's last delivery
// must be for the stream to count as still delivering: drain's last
// second, as the warning says.
const lateWindow = time.Second

// endRate measures the deliveries per second in the last lateWindow of
// drain: samples of the recorder's running count of first deliveries,
// kept in a ring, at most one every endRateStep. drain takes one at each
// tick and reads the rate once it ends; nothing is allocated per sample.
type endRate struct {
	at  [endRateSlots]time.Duration
	got [endRateSlots]int64
	n   int // samples taken; the latest is at (n-1) % endRateSlots
}

// endRateStep and endRateSlots keep a little more than lateWindow of
// samples: 100 ms apart, 12 of them.
const (
	endRateStep  = 100 * time.Millisecond
	endRateSlots = 12
)

// sample keeps got (first deliveries so far) at time at, unless the last
// sample is less than endRateStep old.
func (e *endRate) sample(at time.Duration, got int64) {
	if e.n > 0 && at-e.at[(e.n-1)%endRateSlots] < endRateStep {
		return
	}
	e.at[e.n%endRateSlots], e.got[e.n%endRateSlots] = at, got
	e.n++
}

// rate is the deliveries per second from the sample nearest lateWindow
// before end to got at end: over the span the samples cover when drain
// was shorter than lateWindow, rounded to the nearest whole delivery.
func (e *endRate) rate(end time.Duration, got int64) int64 {
	if e.n == 0 {
		return 0
	}
	first := max(0, e.n-endRateSlots)
	k := first
	for i := first; i < e.n; i++ {
		if e.at[i%endRateSlots] <= end-lateWindow {
			k = i
		}
	}
	span := end - e.at[k%endRateSlots]
	if span <= 0 {
		return 0
	}
	n := got - e.got[k%endRateSlots]
	return (n*int64(time.Second) + int64(span)/2) / int64(span)
}

// holder is one stream a publisher's messages arrive on: a subscriber's
// own, or its share group's, and the receiving group it counts for.
type holder struct {
	st    *stream
	group int
}

// settleLate counts, when the run is over, the deliveries that were late
// rather than lost: on each stream that received a delivery in drain's
// last second (lateWindow before drainEnd, or later), the messages of its
// publisher above the highest sequence it received, up to the last one
// the publisher sent. A broker delivers a publisher's messages in order on
// a subscription (MQTT 3.1.1 §4.6), so those were still on their way when
// drain ended, while a hole below the highest was skipped: dropped, and
// left to lost_broker. Messages of the tail never acknowledged (unacked,
// by publisher) are lost_unacked's, and messages never sent lost_unsent's:
// a publisher on this shard is known to have sent up to its c.next, one on
// another shard up to the cutoff, and the report bounds the count by what
// the other causes leave of lost (stats.Metrics.LostLate), so that the
// causes add up to it.
//
// It costs a few closed-form schedule counts per stream, plus a pass over
// the unacknowledged tokens of each publisher whose stream qualifies;
// nothing per delivery. Closed-loop publishers (publish.rate: max) and
// the streams of a clean churning subscriber, which account for their
// deliveries on their own, are left out: their loss stays lost_broker.
func (r *run) settleLate(byPub map[uint32][]holder, unacked map[int][]mqttc.Token) {
	if r.drainEndAt <= 0 {
		return
	}
	since := int64(r.drainEndAt - lateWindow)
	r.unsentMu.Lock()
	cutoff, known := r.unsentCutoff, r.cutoffKnown
	r.unsentMu.Unlock()
	if !known {
		return
	}
	prog := r.prog
	for pub, holders := range byPub {
		if int(pub) >= len(prog.Clients) {
			continue
		}
		pc := &prog.Clients[pub]
		if pc.Publish == nil || pc.Publish.Max {
			continue
		}
		hi := cutoff
		if r.owns(pc.Index) {
			if off, ok := pc.Publish.Schedule.At(r.clients[pc.Index].next); ok {
				hi = min(hi, off)
			}
		}
		for _, h := range holders {
			if h.st.lastAt >= since && h.st.peer == 0 {
				r.lateTail(pc, h, hi, unacked[pc.Index])
			}
		}
	}
}

// lateTail counts the late tail of one stream still delivering: publisher
// pc's messages above the stream's highest, intended before hi, less the
// unacknowledged ones among them, per phase and stage.
func (r *run) lateTail(pc *plans.Client, h holder, hi time.Duration, unacked []mqttc.Token) {
	prog := r.prog
	st := h.st
	lo, ok := pc.Publish.Schedule.At(int(st.highest))
	if !ok || lo >= hi {
		return
	}
	bounds := [...]time.Duration{0, prog.Warmup, prog.Warmup + prog.Ramp, prog.Warmup + prog.Ramp + prog.Steady}
	var byPhase [3]int64
	for i := range byPhase {
		if a, b := max(lo, bounds[i]), min(hi, bounds[i+1]); a < b {
			byPhase[i] = int64(prog.Sends(pc, a, b))
		}
	}
	stages := r.lateStages(pc.Index, lo, hi)
	for _, tok := range unacked {
		if uint32(tok) <= st.highest {
			continue
		}
		off, ok := pc.Publish.Schedule.At(int(tok) - 1)
		if !ok || off < lo || off >= hi {
			continue
		}
		if i := int(prog.PhaseOf(off)) - int(phase.Warmup); i >= 0 && i < len(byPhase) {
			byPhase[i]--
		}
		if s := prog.StageOf(off); s >= 0 && s < len(stages) {
			stages[s]--
		}
	}
	for i, n := range byPhase {
		if n > 0 {
			r.rec.recordLostLate(phase.Warmup+phase.Phase(i), pc.Group, h.group, n)
		}
	}
	for s, n := range stages {
		if n > 0 {
			r.rec.recordStageLostLate(s, n)
		}
	}
}

// lateStages counts publisher pub's messages intended in [lo, hi) per
// stage; nil without stages.
func (r *run) lateStages(pub int, lo, hi time.Duration) []int64 {
	prog := r.prog
	if len(prog.Stages) == 0 {
		return nil
	}
	out := make([]int64, len(prog.Stages))
	for i := max(0, prog.StageOf(lo)); i < len(prog.Stages); i++ {
		sp := &prog.Stages[i]
		if sp.Start >= hi {
			break
		}
		if a, b := max(lo, sp.Start), min(hi, sp.Start+sp.Duration); a < b {
			out[i] = int64(prog.Sends(&prog.Clients[pub], a, b))
		}
	}
	return out
}

// recordLostLate counts n deliveries to group recv of publisher group
// pub's messages of phase that were still on their way when drain ended
// (settleLate). It runs once, when the run is over.
func (r *recorder) recordLostLate(ph phase.Phase, pub, recv int, n int64) {
	st := &r.stripes[0]
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapLostLate, client: -1, ph: ph, group: pub, other: recv, n: n})
	}
	st.cell(r.nGroups, ph, recv).LostLate += n
	st.cell(r.nGroups, ph, pub).LostLateOwn += n
	st.mu.Unlock()
}

// recordStageLostLate counts n deliveries of stage's messages that were
// still on their way when drain ended. It runs once, when the run is over.
func (r *recorder) recordStageLostLate(stage int, n int64) {
	if stage < 0 || stage >= r.nStages {
		return
	}
	st := &r.stripes[0]
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapStageLostLate, client: -1, other: stage, n: n})
	}
	st.stages[stage].LostLate += n
	st.mu.Unlock()
}
