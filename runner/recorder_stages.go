package runner

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/stats"
)

// Per-stage metrics (issue 10): each stripe holds a cell per stage of the
// plan beside its phase × group cells, sized when the run starts, and a
// message is counted in the stage its intended send time falls in
// (plans.Program.StageOf), on the publishing side when it is sent (or
// found unsent) and on the receiving side from the intended time its
// header carries. A stage cell counts every delivery once, as a merged
// phase does (the subscriber view), so it keeps no per-group split.

// Histograms (~144 KiB each) are not kept per stripe and stage, which a
// plan of many stages on many cores would multiply: each second's
// snapshot folds every stripe's stage histograms into one pair per stage
// (stageHists) and gives them back to the stripe to reuse, so a stripe
// holds about as many as stages are receiving at once.

// stageHist is one stage's latency and lag, folded from the stripes.
type stageHist struct {
	latency, lag *hdrhistogram.Histogram
}

// withStages gives every stripe a cell per stage; it runs before any
// client records.
func (r *recorder) withStages(n int) {
	r.nStages = n
	r.stageHists = make([]stageHist, n)
	for i := range r.stripes {
		r.stripes[i].stages = make([]stats.Metrics, n)
	}
}

// hist returns a spare histogram of the stripe, or a new one. The stripe
// must be locked.
func (st *stripe) hist() *hdrhistogram.Histogram {
	if n := len(st.spare); n > 0 {
		h := st.spare[n-1]
		st.spare = st.spare[:n-1]
		return h
	}
	return stats.NewHistogram()
}

// foldStages moves the stripe's stage histograms into the recorder's
// (stageHists) and keeps them, reset, as spares. The stripe must be
// locked; the snapshot calls it each second and mergeStages at the end.
func (r *recorder) foldStages(st *stripe) {
	if r.nStages == 0 {
		return
	}
	r.stageMu.Lock()
	defer r.stageMu.Unlock()
	for s := range st.stages {
		m, into := &st.stages[s], &r.stageHists[s]
		into.latency = foldHist(into.latency, m.Latency, st)
		into.lag = foldHist(into.lag, m.Lag, st)
		m.Latency, m.Lag = nil, nil
	}
}

// foldHist merges h (when there is one) into dst, allocated on first
// use, and gives h back to the stripe's spares, reset.
func foldHist(dst, h *hdrhistogram.Histogram, st *stripe) *hdrhistogram.Histogram {
	if h == nil {
		return dst
	}
	if h.TotalCount() > 0 {
		if dst == nil {
			dst = stats.NewHistogram()
		}
		dst.Merge(h)
		h.Reset()
	}
	st.spare = append(st.spare, h)
	return dst
}

// stageSent counts a sent message in its stage's cell: it, its payload
// bytes, the deliveries it implies and, on a schedule, its lag. The stripe
// must be locked.
func stageSent(st *stripe, m *stats.Metrics, s *sendRecord) {
	m.Sent++
	m.SentBytes += s.bytes
	m.Expected += s.expected
	if !s.closed {
		if m.Lag == nil {
			m.Lag = st.hist()
		}
		record(&m.Lag, micros(s.lag), &m.OverRange)
		if s.lag > stats.LateThreshold {
			m.Late++
		}
	}
}

// countReceived adds a delivery to m's counts (received, bytes, first and
// last arrival, duplicates, out of order): the same for a phase×group cell
// and a stage's. The stripe must be locked.
func countReceived(m *stats.Metrics, d *recvRecord) {
	m.Received++
	m.ReceivedBytes += d.bytes
	if m.LastReceived == 0 || d.at < m.FirstReceived {
		m.FirstReceived = d.at
	}
	m.LastReceived = max(m.LastReceived, d.at)
	switch d.kind {
	case deliveryDuplicate:
		m.Duplicates++
	case deliveryOutOfOrder:
		m.OutOfOrder++
	}
}

// stageReceived counts a delivery (recordReceive has set overlap copies
// apart) in its message's stage's cell. The stripe must be locked.
func stageReceived(st *stripe, m *stats.Metrics, d *recvRecord) {
	countReceived(m, d)
	if m.Latency == nil {
		m.Latency = st.hist()
	}
	record(&m.Latency, micros(d.latency), &m.OverRange)
}

// recordStageUnsent counts n messages of stage that the schedule called
// for and that were never sent, each implying expected deliveries, which
// are lost.
func (r *recorder) recordStageUnsent(client, stage int, n, expected int64) {
	if n <= 0 || stage < 0 || stage >= r.nStages {
		return
	}
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapStageUnsent, client: client, other: stage, n: n, expected: expected})
	}
	m := &st.stages[stage]
	m.Unsent += n
	m.Expected += n * expected
	m.LostUnsent += n * expected
	st.mu.Unlock()
}

// recordStageLostUnacked counts n deliveries of stage's messages that were
// sent, never acknowledged and never delivered. It runs once, when the
// run is over.
func (r *recorder) recordStageLostUnacked(stage int, n int64) {
	if stage < 0 || stage >= r.nStages {
		return
	}
	st := &r.stripes[0]
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapStageLostUnacked, client: -1, other: stage, n: n})
	}
	st.stages[stage].LostUnacked += n
	st.mu.Unlock()
}

// recordStageMisjudgedCopies counts again in stage's cell, as duplicates
// received, n repeats of payload size bytes first taken for overlap
// copies (see recordMisjudgedCopies). It runs once, when the run is over.
func (r *recorder) recordStageMisjudgedCopies(stage int, n, size int64) {
	if n <= 0 || stage < 0 || stage >= r.nStages {
		return
	}
	st := &r.stripes[0]
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapStageMisjudgedCopies, client: -1, other: stage, n: n, size: size})
	}
	m := &st.stages[stage]
	m.OverlapCopies -= n
	m.Duplicates += n
	m.Received += n
	m.ReceivedBytes += n * size
	st.mu.Unlock()
}

// mergeStages sums every stripe's stage cells; nil without stages. Their
// Lost is fixed by stats.FinishPhases (stageStats).
func (r *recorder) mergeStages() []stats.Metrics {
	if r.nStages == 0 {
		return nil
	}
	out := make([]stats.Metrics, r.nStages)
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		r.foldStages(st)
		for s := range out {
			out[s].Merge(&st.stages[s])
		}
		st.mu.Unlock()
	}
	r.stageMu.Lock()
	defer r.stageMu.Unlock()
	for s := range out {
		// The run is over: the folded histograms are the stage's.
		out[s].Latency, out[s].Lag = r.stageHists[s].latency, r.stageHists[s].lag
	}
	return out
}

// recordStageUnsentSpan counts as unsent, stage by stage, the messages of
// c's schedule intended in [lo, hi) that fall in a stage: a few closed
// forms per stage the span touches, never per message. r.unsentMu must be
// held (recordUnsentSpan).
func (r *run) recordStageUnsentSpan(c *client, lo, hi time.Duration) {
	prog := r.prog
	for i := max(0, prog.StageOf(lo)); i < len(prog.Stages); i++ {
		sp := &prog.Stages[i]
		if sp.Start >= hi {
			break
		}
		a, b := max(lo, sp.Start), min(hi, sp.Start+sp.Duration)
		if a >= b {
			continue
		}
		n := int64(prog.Sends(c.plan, a, b))
		r.rec.recordStageUnsent(c.plan.Index, i, n, c.expected)
	}
}

// stageStats is each stage's figures as the run measured them, with its
// planned window; nil without stages.
func (r *run) stageStats() []stats.StageStats {
	ms := r.rec.mergeStages()
	if ms == nil {
		return nil
	}
	out := make([]stats.StageStats, len(ms))
	for i := range ms {
		sp := &r.prog.Stages[i]
		out[i] = stats.StageStats{Index: i, Name: sp.Name, Start: sp.Start, End: sp.Start + sp.Duration, Metrics: ms[i]}
	}
	stats.FinishPhases(nil, out)
	return out
}
