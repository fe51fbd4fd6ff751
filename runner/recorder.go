package runner

import (
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// recorder collects every measurement of a run. It is striped: each client
// writes to the stripe of its index, so there is no global lock on the hot
// path, and there are a few stripes per CPU, never one per client (a
// histogram is ~144 KiB). Stripes are merged at per-second snapshots and at
// the end.
type recorder struct {
	stripes []stripe
	// sentBy counts each client's messages sent, in a sharded run only
	// (shard.go: what it sent each shard), under the client's stripe.
	sentBy  []int64
	nGroups int
	// nStages is the plan's stages: each stripe has a cell per stage
	// (recorder_stages.go), 0 without stages.
	nStages int
	// stageHists holds each stage's latency and lag histograms folded
	// from the stripes (recorder_stages.go), under stageMu.
	stageMu    sync.Mutex
	stageHists []stageHist
	// allowance is how long a message is given to arrive before its
	// missing deliveries count as lost so far (see run.LostSoFar), and
	// dueWidth the span of intended send time (ns) one slot of the due
	// rings counts: a whole second, or more when the allowance is longer
	// than the ring can hold in seconds.
	allowance time.Duration
	dueWidth  int64
	// trackAck records each second's ack latencies per group (for
	// Options.Ack); off, an ack costs no histogram.
	trackAck bool
	// tap, set by tests only, keeps every record call (recorder_tap.go).
	tap *recorderTap
	// shardSelf is this shard's index when the recorder splits deliveries
	// by publisher shard (recorder_clock.go).
	shardSelf int
}

// dueSlots is the length of each stripe's ring of due counts per group:
// enough slots of dueWidth to hold every message not yet given its
// allowance, with room for a snapshot that runs a few seconds late.
const dueSlots = 32

// dueSlot counts, for the messages whose intended send time falls in
// one slot of dueWidth (bucket is its index since the epoch), the
// deliveries to one group they imply (expected) and the first-time
// deliveries of them so far (unique).
type dueSlot struct {
	bucket, expected, unique int64
}

// stripe holds one share of the counters and histograms.
type stripe struct {
	mu sync.Mutex
	// cells[phase*nGroups+group] are the totals per phase and group.
	cells []stats.Metrics
	// stages[i] are the totals of the messages intended in stage i
	// (recorder_stages.go); their histograms are folded into the
	// recorder's each second and come back to spare.
	stages []stats.Metrics
	spare  []*hdrhistogram.Histogram
	// sec[group] accumulates the current second for the timeline, one
	// entry per plan group; the second's totals are their sums.
	sec []secondAcc
	// due[group*dueSlots+bucket%dueSlots] counts the deliveries of
	// messages still within their allowance, by intended send time;
	// settled[group] is expected minus first-time deliveries of every
	// message past it (and of every message never sent), which may be
	// negative in one stripe: a message is expected in its publisher's
	// stripe and received in its subscriber's. matured is the first bucket
	// not yet past its allowance, as the last snapshot set it.
	due     []dueSlot
	settled []int64
	matured int64
	// taken counts the timeline seconds taken of the stripe (for a tap).
	taken int64
	// from counts deliveries by publisher shard, in a sharded run only
	// (recorder_clock.go).
	from []pairAcc
	_    [64]byte // keep neighbouring stripes' locks off one cache line
}

// secondAcc is one stripe's share of one group's current second.
type secondAcc struct {
	sent, received, errors, disconnects int64
	// acked counts PUBACK/PUBCOMP of the group's publishes; duplicates the
	// deliveries to the group's clients that repeated one already had.
	acked, duplicates int64
	// latency is allocated on the group's first delivery recorded in the
	// stripe, so that only receiving groups hold one (a histogram is
	// ~144 KiB); it is reset, never freed, at each second.
	latency *hdrhistogram.Histogram
	// ack holds the second's ack latencies of the group's publishes, when
	// the recorder tracks them; allocated on the first, reset each second.
	ack    *hdrhistogram.Histogram
	lagMax int64
}

// newRecorder returns the recorder of a run of nGroups groups whose
// messages are given allowance to arrive (the plan's drain, at least a
// second: a message in flight is not lost).
func newRecorder(nGroups int, allowance time.Duration) *recorder {
	n := max(4, 2*runtime.GOMAXPROCS(0))
	// An allowance beyond a day (a plan's drain may say anything) never
	// passes during a run anyway; bounded, the arithmetic cannot overflow.
	allowance = min(max(allowance, time.Second), 24*time.Hour)
	// dueSlots-2 slots of whole seconds hold the allowance and a few
	// seconds of late snapshots.
	const span = (dueSlots - 2) * time.Second
	width := max(1, (allowance+4*time.Second+span-1)/span) * time.Second
	r := &recorder{stripes: make([]stripe, n), nGroups: nGroups, allowance: allowance, dueWidth: int64(width)}
	for i := range r.stripes {
		r.stripes[i].cells = make([]stats.Metrics, phase.Count*nGroups)
		r.stripes[i].sec = make([]secondAcc, nGroups)
		r.stripes[i].due = make([]dueSlot, dueSlots*nGroups)
		r.stripes[i].settled = make([]int64, nGroups)
	}
	return r
}

// bucket is the due-ring slot index of an intended send time (ns since
// the epoch).
func (r *recorder) bucket(intended int64) int64 { return max(intended, 0) / r.dueWidth }

// addDue counts expected deliveries to group of the messages intended in
// bucket b, and first-time deliveries of them: in the bucket's slot while
// it is within its allowance, in settled once it is past. A slot still
// holding an older bucket (a snapshot very late) is settled first; a
// bucket older than its slot's is past its allowance anyway. The stripe
// must be locked.
func (st *stripe) addDue(group int, b, expected, unique int64) {
	if b < st.matured {
		st.settled[group] += expected - unique
		return
	}
	sl := &st.due[group*dueSlots+int(b%dueSlots)]
	switch {
	case sl.bucket > b:
		st.settled[group] += expected - unique
		return
	case sl.bucket < b:
		st.settled[group] += sl.expected - sl.unique
		*sl = dueSlot{bucket: b}
	}
	sl.expected += expected
	sl.unique += unique
}

// stripeFor returns the stripe a client records into.
func (r *recorder) stripeFor(client int) *stripe { return &r.stripes[client%len(r.stripes)] }

// cell returns the metrics of a phase and group; the stripe must be locked.
func (s *stripe) cell(nGroups int, ph phase.Phase, group int) *stats.Metrics {
	return &s.cells[int(ph)*nGroups+group]
}

// record adds v (µs) to *h, allocating the histogram on first use only, and
// counts values beyond its range instead of dropping them silently.
func record(h **hdrhistogram.Histogram, v int64, over *int64) {
	if *h == nil {
		*h = stats.NewHistogram()
	}
	if v < stats.HistogramMin {
		v = stats.HistogramMin
	}
	if v > stats.HistogramMax {
		*over++
		v = stats.HistogramMax
	}
	_ = (*h).RecordValue(v)
}

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// sendRecord is what a publisher records for one message.
type sendRecord struct {
	phase      phase.Phase
	group      int
	bytes      int64
	expected   int64
	expectedBy []int // deliveries by receiving group
	lag        time.Duration
	// intended is the message's intended send time, ns since the epoch.
	intended int64
	// closed: a closed-loop send (publish.rate: max), which has no
	// schedule to lag behind: it leaves the lag figures alone.
	closed bool
	// inStage is 1 + the index of the stage the message's intended time
	// falls in, 0 when it is in none (Program.StageOf).
	inStage int
}

// recordSend counts one PUBLISH written.
func (r *recorder) recordSend(client int, s *sendRecord) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapSend, client: client, send: *s})
	}
	m := st.cell(r.nGroups, s.phase, s.group)
	m.Sent++
	if r.sentBy != nil {
		r.sentBy[client]++
	}
	m.SentBytes += s.bytes
	m.ExpectedOwn += s.expected
	if s.inStage > 0 {
		stageSent(st, &st.stages[s.inStage-1], s)
	}
	b := r.bucket(s.intended)
	for g, n := range s.expectedBy {
		if n != 0 {
			st.cell(r.nGroups, s.phase, g).Expected += int64(n)
			st.addDue(g, b, int64(n), 0)
		}
	}
	sec := &st.sec[s.group]
	sec.sent++
	if !s.closed {
		lag := micros(s.lag)
		record(&m.Lag, lag, &m.OverRange)
		if s.lag > stats.LateThreshold {
			m.Late++
		}
		if lag > sec.lagMax {
			sec.lagMax = lag
		}
	}
	st.mu.Unlock()
}

// recordUnsent counts n messages of a publisher that its schedule called
// for in phase and that were never sent, and the deliveries they imply
// (by receiving group) as expected and lost: a message that never left
// is a delivery that never arrived, whatever the reason; lost so far at
// once, since nothing can make it arrive.
func (r *recorder) recordUnsent(client int, ph phase.Phase, group int, n int64, expected int64, expectedBy []int) {
	if n <= 0 {
		return
	}
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapUnsent, client: client, ph: ph, group: group, n: n, expected: expected, expectedBy: expectedBy})
	}
	m := st.cell(r.nGroups, ph, group)
	m.Unsent += n
	m.ExpectedOwn += n * expected
	m.LostUnsentOwn += n * expected
	for g, k := range expectedBy {
		if k != 0 {
			c := st.cell(r.nGroups, ph, g)
			c.Expected += n * int64(k)
			c.LostUnsent += n * int64(k)
			st.settled[g] += n * int64(k)
		}
	}
	st.mu.Unlock()
}

// recordLostUnacked counts n deliveries to group recv of publisher group
// pub's messages of phase that were sent, never acknowledged and never
// delivered. It runs once, when the run is over.
func (r *recorder) recordLostUnacked(ph phase.Phase, pub, recv int, n int64) {
	st := &r.stripes[0]
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapLostUnacked, client: -1, ph: ph, group: pub, other: recv, n: n})
	}
	st.cell(r.nGroups, ph, recv).LostUnacked += n
	st.cell(r.nGroups, ph, pub).LostUnackedOwn += n
	st.mu.Unlock()
}

// recordMisjudgedCopies counts again, as duplicates received, n repeats
// of payload size bytes first taken for overlap copies (see
// stream.misjudged). It runs once, when the run is over.
func (r *recorder) recordMisjudgedCopies(ph phase.Phase, group int, n, size int64) {
	st := &r.stripes[0]
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapMisjudgedCopies, client: -1, ph: ph, group: group, n: n, size: size})
	}
	m := st.cell(r.nGroups, ph, group)
	m.OverlapCopies -= n
	m.Duplicates += n
	m.Received += n
	m.ReceivedBytes += n * size
	// The timeline counts them too (in the second now ending, without a
	// latency), so that its received adds up to the run's.
	st.sec[group].received += n
	st.sec[group].duplicates += n
	st.mu.Unlock()
}

// recordAck counts one PUBACK/PUBCOMP and its latency; a refused publish
// counts as an error through run.fail, not here.
func (r *recorder) recordAck(client int, ph phase.Phase, group int, d time.Duration, failed bool) {
	if failed {
		return
	}
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapAck, client: client, ph: ph, group: group, d: d})
	}
	m := st.cell(r.nGroups, ph, group)
	m.Acked++
	us := micros(d)
	record(&m.Ack, us, &m.OverRange)
	sec := &st.sec[group]
	sec.acked++
	if r.trackAck {
		if sec.ack == nil {
			sec.ack = stats.NewHistogram()
		}
		_ = sec.ack.RecordValue(min(max(us, stats.HistogramMin), stats.HistogramMax))
	}
	st.mu.Unlock()
}

// recordError counts one error (every error the report lists counts once,
// so that its "N in all" is the errors metric).
func (r *recorder) recordError(client int, ph phase.Phase, group int) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapError, client: client, ph: ph, group: group})
	}
	st.cell(r.nGroups, ph, group).Errors++
	st.sec[group].errors++
	st.mu.Unlock()
}

// recvRecord is what a subscriber records for one delivery.
type recvRecord struct {
	phase    phase.Phase // send phase of the message
	group    int         // receiving client's group
	pubGroup int         // publishing client's group
	bytes    int64
	latency  time.Duration
	// at is when the delivery arrived, since the run's epoch.
	at   time.Duration
	kind delivery
	// from is the publisher's shard, in a sharded run; -1 otherwise.
	from int32
	// scheduled is set for a message of this run's schedules, whose
	// deliveries were counted as expected: a first delivery of it counts
	// against them (as sent at at - latency). Another process's message
	// (mqplan sub) was never expected.
	scheduled bool
	// inStage is 1 + the index of the stage the message was intended
	// in, 0 when in none.
	inStage int
}

// recordReceive counts one delivery.
func (r *recorder) recordReceive(client int, d *recvRecord) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapReceive, client: client, recv: *d})
	}
	m := st.cell(r.nGroups, d.phase, d.group)
	if d.kind == deliveryOverlap {
		// A copy the broker sent for another matching subscription:
		// counted apart, neither a delivery nor a duplicate.
		m.OverlapCopies++
		if d.inStage > 0 {
			st.stages[d.inStage-1].OverlapCopies++
		}
		st.mu.Unlock()
		return
	}
	if d.inStage > 0 {
		stageReceived(st, &st.stages[d.inStage-1], d)
	}
	countReceived(m, d)
	if d.kind != deliveryDuplicate {
		st.cell(r.nGroups, d.phase, d.pubGroup).ReceivedOwn++
		if d.scheduled {
			st.addDue(d.group, r.bucket(int64(d.at-d.latency)), 0, 1)
		}
	}
	us := micros(d.latency)
	record(&m.Latency, us, &m.OverRange)
	if d.from >= 0 && st.from != nil {
		r.recordFrom(st, m, d, us)
	}
	sec := &st.sec[d.group]
	sec.received++
	if d.kind == deliveryDuplicate {
		sec.duplicates++
	}
	if sec.latency == nil {
		sec.latency = stats.NewHistogram()
	}
	_ = sec.latency.RecordValue(min(max(us, stats.HistogramMin), stats.HistogramMax))
	st.mu.Unlock()
}

// recordCorrupt counts a delivery whose payload failed the content check.
func (r *recorder) recordCorrupt(client int, ph phase.Phase, group int) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapCorrupt, client: client, ph: ph, group: group})
	}
	st.cell(r.nGroups, ph, group).Corrupted++
	st.mu.Unlock()
}

// recordForeign counts a delivery that is not one of this run's messages.
func (r *recorder) recordForeign(client int, ph phase.Phase, group int) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapForeign, client: client, ph: ph, group: group})
	}
	st.cell(r.nGroups, ph, group).Foreign++
	st.mu.Unlock()
}

// recordUnexpected counts a delivery of one of this run's messages that
// the client's subscriptions do not imply, in the phase it was sent in.
func (r *recorder) recordUnexpected(client int, ph phase.Phase, group int) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapUnexpected, client: client, ph: ph, group: group})
	}
	st.cell(r.nGroups, ph, group).Unexpected++
	st.mu.Unlock()
}

// event is a connection-level count.
type event uint8

const (
	evConnectOK event = iota
	evConnectFailed
	evSubscribeFailed
	evDisconnect
	evReconnect
	evClientLost
	evQoSDowngrade
	evChurnDisconnect
	evChurnReconnect
)

// recordEvent counts a connection-level event in the current phase;
// d is the CONNECT or SUBSCRIBE latency where it applies.
func (r *recorder) recordEvent(client int, ph phase.Phase, group int, ev event, d time.Duration) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapConnEvent, client: client, ph: ph, group: group, ev: ev, d: d})
	}
	m := st.cell(r.nGroups, ph, group)
	switch ev {
	case evConnectOK:
		m.ConnectAttempts++
		m.ConnectOK++
		record(&m.Connect, micros(d), &m.OverRange)
	case evConnectFailed:
		m.ConnectAttempts++
		m.ConnectFailed++
	case evSubscribeFailed:
		m.SubscribeFailed++
	case evDisconnect:
		m.Disconnects++
		st.sec[group].disconnects++
	case evReconnect:
		m.Reconnects++
	case evClientLost:
		m.ClientsLost++
	case evQoSDowngrade:
		m.QoSDowngrades++
	case evChurnDisconnect:
		m.ChurnDisconnects++
	case evChurnReconnect:
		m.ChurnReconnects++
	}
	st.mu.Unlock()
}

// recordSubscribe records a SUBSCRIBE→SUBACK latency.
func (r *recorder) recordSubscribe(client int, ph phase.Phase, group int, d time.Duration) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapSubscribe, client: client, ph: ph, group: group, d: d})
	}
	m := st.cell(r.nGroups, ph, group)
	record(&m.Subscribe, micros(d), &m.OverRange)
	st.mu.Unlock()
}

// secondScratch is the snapshot goroutine's reusable state: histograms
// per group (latency and ack), allocated on the group's first sample, one
// for the whole second, and the lost-so-far sums, so that taking a second
// allocates nothing but its Groups.
type secondScratch struct {
	groups, acks []*hdrhistogram.Histogram
	total        *hdrhistogram.Histogram
	lost         []int64
}

func newSecondScratch(nGroups int) *secondScratch {
	return &secondScratch{groups: make([]*hdrhistogram.Histogram, nGroups), acks: make([]*hdrhistogram.Histogram, nGroups),
		total: stats.NewHistogram(), lost: make([]int64, nGroups)}
}

// secondHooks are the live views given each second's figures by
// recorder.second (see Options.Latency, Ack and LostSoFar); any may be
// nil.
type secondHooks struct {
	latency, ack func(group int, h *hdrhistogram.Histogram)
	lost         func(group int, n int64)
}

// matured is the first due bucket whose messages are still within their
// allowance at now (ns since the epoch); final, every bucket has had all
// the time it will get.
func (r *recorder) matured(now int64, final bool) int64 {
	if final {
		return math.MaxInt64
	}
	return max(0, now-int64(r.allowance)) / r.dueWidth
}

// second takes and resets the current second's figures of every stripe,
// per group, and their totals. Each stripe is read once, under its lock,
// so a message is counted in exactly one second and one group. The
// caller fills in what the recorder does not know (time, phase,
// connections, group names).
//
// It also settles the due buckets before matured (see recorder.matured)
// and gives the hooks what is set: each group's latency and ack
// histograms of the second (for those with samples, reset after), and
// every group's deliveries lost so far: expected minus first-time
// deliveries of the messages past their allowance or never sent, at
// least 0.
func (r *recorder) second(sc *secondScratch, hooks secondHooks, matured int64) stats.Second {
	s := stats.Second{Groups: make([]stats.GroupSecond, r.nGroups)}
	clear(sc.lost)
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		r.foldStages(st)
		st.taken++
		st.matured = max(st.matured, matured)
		for g := range st.sec {
			acc, gs := &st.sec[g], &s.Groups[g]
			gs.Sent += acc.sent
			gs.Received += acc.received
			gs.Errors += acc.errors
			gs.Disconnects += acc.disconnects
			gs.Acked += acc.acked
			gs.Duplicates += acc.duplicates
			gs.LagMax = max(gs.LagMax, time.Duration(acc.lagMax)*time.Microsecond)
			mergeInto(&sc.groups[g], acc.latency)
			mergeInto(&sc.acks[g], acc.ack)
			*acc = secondAcc{latency: acc.latency, ack: acc.ack}
			ring := st.due[g*dueSlots : (g+1)*dueSlots]
			for j := range ring {
				if sl := &ring[j]; sl.bucket < st.matured {
					st.settled[g] += sl.expected - sl.unique
					sl.expected, sl.unique = 0, 0
				}
			}
			sc.lost[g] += st.settled[g]
		}
		st.mu.Unlock()
	}
	for g := range s.Groups {
		gs := &s.Groups[g]
		s.Sent += gs.Sent
		s.Received += gs.Received
		s.Errors += gs.Errors
		s.Disconnects += gs.Disconnects
		s.LagMax = max(s.LagMax, gs.LagMax)
		if h := sc.groups[g]; h != nil && h.TotalCount() > 0 {
			gs.P50, gs.P99, gs.Max = stats.Quantiles(h)
			sc.total.Merge(h)
			if hooks.latency != nil {
				hooks.latency(g, h)
			}
			h.Reset()
		}
		if h := sc.acks[g]; h != nil && h.TotalCount() > 0 {
			if hooks.ack != nil {
				hooks.ack(g, h)
			}
			h.Reset()
		}
		if hooks.lost != nil {
			hooks.lost(g, max(0, sc.lost[g]))
		}
	}
	if sc.total.TotalCount() > 0 {
		s.P50, s.P99, s.Max = stats.Quantiles(sc.total)
		sc.total.Reset()
	}
	return s
}

// mergeInto adds a stripe's histogram of the second (when it has
// samples) into *dst, allocated on first use, and resets it.
func mergeInto(dst **hdrhistogram.Histogram, h *hdrhistogram.Histogram) {
	if h == nil || h.TotalCount() == 0 {
		return
	}
	if *dst == nil {
		*dst = stats.NewHistogram()
	}
	(*dst).Merge(h)
	h.Reset()
}

// totals reads the counters needed to know whether every expected
// delivery has arrived: expected deliveries of the messages sent (those of
// unsent messages can never arrive) and first-time deliveries, over all
// phases; and the acknowledgements and answers (request/response)
// received, which with them show that the broker is still at work
// (drain's quiet).
func (r *recorder) totals() (expected, unique, acked int64) {
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		for j := range st.cells {
			c := &st.cells[j]
			expected += c.Expected - c.LostUnsent
			unique += c.Received - c.Duplicates
			acked += c.Acked + c.ReqResp.Responses + c.ReqResp.Late + c.ReqResp.Duplicates
		}
		st.mu.Unlock()
	}
	return expected, unique, acked
}

// merge builds the per-phase statistics: every stripe's cells summed, and
// the derived figures (Lost, totals) fixed by stats.FinishPhases, the
// code a merge of partial results runs too.
func (r *recorder) merge() []stats.PhaseStats {
	out := make([]stats.PhaseStats, phase.Count)
	for _, p := range phase.All {
		out[p].Phase = p
		out[p].Groups = make([]stats.Metrics, r.nGroups)
	}
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		for _, p := range phase.All {
			for g := 0; g < r.nGroups; g++ {
				out[p].Groups[g].Merge(st.cell(r.nGroups, p, g))
			}
		}
		st.mu.Unlock()
	}
	stats.FinishPhases(out, nil)
	return out
}

// latencyQuantile is the q-th percentile of every end-to-end latency
// recorded so far, in all phases and groups; 0 when there is none. It
// merges every stripe's histograms, so it is for once-per-run decisions
// (how long drain stays quiet), never for a hot path.
func (r *recorder) latencyQuantile(q float64) time.Duration {
	h := stats.NewHistogram()
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		for j := range st.cells {
			if l := st.cells[j].Latency; l != nil {
				h.Merge(l)
			}
		}
		st.mu.Unlock()
	}
	if h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.ValueAtQuantile(q)) * time.Microsecond
}
