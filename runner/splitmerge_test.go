package runner

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/partial"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/stats"
)

// splitPlan exercises every kind of count a merge adds: stages, QoS 1
// pairs, a $share group, a QoS 0 stream the test broker reorders, and
// (with the broker's faults) loss and duplicates.
const splitPlan = `
name: split-merge
groups:
  - name: sub
    count: 4
    subscribe: {topic: "t/%i", qos: 1}
  - name: pub
    count: 4
    publish: {topic: "t/%i", qos: 1, size: 64}
  - name: shared
    count: 3
    subscribe: {topic: "$share/g/s/#", qos: 1}
  - name: spub
    count: 2
    publish: {topic: "s/%i", qos: 1, size: 64}
  - name: osub
    count: 2
    subscribe: {topic: "ooo/#", qos: 0}
  - name: opub
    count: 2
    publish: {topic: "ooo/%i", qos: 0, size: 64}
warmup: 500ms
stages:
  - {name: low, duration: 1s, rate: 50/s}
  - {name: high, duration: 1s, rate: 150/s}
drain: 1s
thresholds:
  - loss_rate < 0.2
  - stages.high.p99 < 1s
`

// TestSplitMergeEqualsRun is the merge property (issue 11, scaleout.md
// §3.5): one real run's record calls, split by client among n shards as
// sharded processes would record them (each subscribing client's stream
// whole, each $share group whole, on random assignments), replayed into
// a recorder per shard, written as partial results, read back and merged,
// give the run's every counter, every histogram bucket for bucket, its
// per-second timeline and its verdict and report, byte for byte.
func TestSplitMergeEqualsRun(t *testing.T) {
	t.Parallel()
	p, err := plans.LoadBytes("split.yaml", []byte(splitPlan), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog := compile(t, p)
	tap := &recorderTap{}
	reorder := &reorderHook{held: map[string]packets.Packet{}, n: map[string]int{}}
	st, _ := runWith(t, prog, broker.Options{Faults: broker.Faults{DropEvery: 23, DuplicateEvery: 17}, Hooks: []mqtt.Hook{reorder}}, Options{tap: tap})
	m := all(st)
	if m.Lost == 0 || m.Duplicates == 0 || m.OutOfOrder == 0 || len(st.Stages) != 2 || st.Stages[1].Metrics.Received == 0 {
		t.Fatalf("the run must have loss, duplicates, out-of-order deliveries and stages: lost %d dup %d ooo %d (%d swapped) stages %d",
			m.Lost, m.Duplicates, m.OutOfOrder, reorder.swapped.Load(), len(st.Stages))
	}
	events := slices.Clone(tap.events)
	slices.SortStableFunc(events, func(a, b tapEvent) int { return int(a.second - b.second) })
	want := reportJSON(t, prog, st)
	t.Logf("run: sent %d expected %d received %d lost %d dup %d ooo %d (%d swapped), %d events, %d seconds", m.Sent, m.Expected, m.Received, m.Lost, m.Duplicates, m.OutOfOrder, reorder.swapped.Load(), len(events), len(st.Timeline))

	// The tap holds the whole run: replayed unsplit, it is the run.
	whole := replaySplit(t, prog, st, events, 0, func(int) int { return 0 })
	sameStats(t, "unsplit replay", st, whole)

	rng := rand.New(rand.NewPCG(11, 3))
	for _, n := range []int{1, 2, 3, 8} {
		for trial := range 2 {
			shardOf := randomShards(prog, n, rng)
			var parts []*partial.File
			for i := range n {
				s := replaySplit(t, prog, st, events, i, shardOf)
				f, err := partial.FromStats(s.stats, s.seconds, partial.Meta{RunID: "r", Plan: partial.PlanSource{File: "split.yaml", Source: splitPlan}, Shard: partial.Shard{Index: i, Count: n}})
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := partial.Write(&b, f); err != nil {
					t.Fatal(err)
				}
				back, err := partial.Read("part", &b)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, back)
			}
			merged, err := partial.Merge(parts, partial.Options{})
			if err != nil {
				t.Fatal(err)
			}
			name := "n=" + string(rune('0'+n)) + " trial " + string(rune('0'+trial))
			sameStats(t, name, st, &split{stats: merged.Stats})
			// A merge of several parts adds the shards' clock rows (with
			// none of their figures: the replay has no coordinator),
			// which one process has not: the rest must be the run's.
			if n > 1 && (merged.Stats.Clock == nil || len(merged.Stats.Clock.Shards) != n) {
				t.Errorf("%s: clock rows %+v, want %d", name, merged.Stats.Clock, n)
			}
			merged.Stats.Clock = nil
			if got := reportJSON(t, prog, merged.Stats); got != want {
				t.Errorf("%s: the merged report differs from the run's", name)
			}
		}
	}
}

// randomShards assigns each client to one of n shards at random, a
// $share group's members together.
func randomShards(prog *plans.Program, n int, rng *rand.Rand) func(int) int {
	byShare := map[int]int{}
	owner := make([]int, len(prog.Clients))
	for i := range prog.Clients {
		owner[i] = rng.IntN(n)
		for _, s := range prog.Clients[i].Subscriptions {
			if s.ShareKey >= 0 {
				if o, ok := byShare[s.ShareKey]; ok {
					owner[i] = o
				} else {
					byShare[s.ShareKey] = owner[i]
				}
			}
		}
	}
	return func(c int) int {
		if c < 0 {
			return 0 // what a run counts once, at its end
		}
		return owner[c]
	}
}

// split is one shard's stats and its per-second histograms.
type split struct {
	stats   *stats.Stats
	seconds *partial.Collector
}

// replaySplit feeds shard's events (shardOf the recording client) into a
// recorder of its own, taking its timeline at the seconds the run took
// its own, and returns the shard's stats. The figures the recorder does
// not keep (connections per second, clients, errors' texts, the broker's
// counters) are the run's, given to shard 0 only.
func replaySplit(t *testing.T, prog *plans.Program, run *stats.Stats, events []tapEvent, shard int, shardOf func(int) int) *split {
	t.Helper()
	rec := newRecorder(len(prog.Groups), prog.Drain)
	rec.withStages(len(prog.Stages))
	sc := newSecondScratch(len(prog.Groups))
	out := &split{stats: &stats.Stats{Started: run.Started, Elapsed: run.Elapsed, BrokerURL: run.BrokerURL}, seconds: partial.NewCollector()}
	lead := shard == 0
	k := 0
	feed := func(upTo int64) {
		for ; k < len(events) && events[k].second <= upTo; k++ {
			if shardOf(events[k].client) == shard {
				events[k].replay(rec)
			}
		}
	}
	for sec, o := range run.Timeline {
		feed(int64(sec))
		s := rec.second(sc, secondHooks{latency: out.seconds.Latency}, 0)
		s.At, s.Phase = o.At, o.Phase
		for g := range s.Groups {
			s.Groups[g].Group = o.Groups[g].Group
			if lead {
				s.Groups[g].Connected, s.Groups[g].Lost = o.Groups[g].Connected, o.Groups[g].Lost
			}
		}
		if lead {
			s.Connected, s.Lost, s.Broker, s.Self, s.Gen, s.Counters = o.Connected, o.Lost, o.Broker, o.Self, o.Gen, o.Counters
		}
		out.seconds.Second(s)
		out.stats.Timeline = append(out.stats.Timeline, s)
	}
	feed(1 << 62)
	st := out.stats
	st.Phases = rec.merge()
	for i := range st.Phases {
		st.Phases[i].Start, st.Phases[i].End = run.Phases[i].Start, run.Phases[i].End
	}
	for i, m := range rec.mergeStages() {
		sp := &prog.Stages[i]
		st.Stages = append(st.Stages, stats.StageStats{Index: i, Name: sp.Name, Start: sp.Start, End: sp.Start + sp.Duration, Metrics: m})
	}
	stats.FinishPhases(nil, st.Stages)
	for _, g := range run.Groups {
		if !lead {
			g = stats.GroupInfo{Name: g.Name}
		}
		st.Groups = append(st.Groups, g)
	}
	if lead {
		st.Interrupted, st.Incomplete, st.ErrorSamples, st.Notices = run.Interrupted, run.Incomplete, run.ErrorSamples, run.Notices
		st.InFlightAtEnd, st.DrainQuiet, st.Procs, st.Broker = run.InFlightAtEnd, run.DrainQuiet, run.Procs, run.Broker
		st.DrainEndRate, st.Drain = run.DrainEndRate, run.Drain
	}
	return out
}

// replay makes the record call e was.
func (e *tapEvent) replay(r *recorder) {
	switch e.kind {
	case tapSend:
		s := e.send
		r.recordSend(e.client, &s)
	case tapUnsent:
		r.recordUnsent(e.client, e.ph, e.group, e.n, e.expected, e.expectedBy)
	case tapLostUnacked:
		r.recordLostUnacked(e.ph, e.group, e.other, e.n)
	case tapMisjudgedCopies:
		r.recordMisjudgedCopies(e.ph, e.group, e.n, e.size)
	case tapAck:
		r.recordAck(e.client, e.ph, e.group, e.d, false)
	case tapError:
		r.recordError(e.client, e.ph, e.group)
	case tapReceive:
		d := e.recv
		r.recordReceive(e.client, &d)
	case tapCorrupt:
		r.recordCorrupt(e.client, e.ph, e.group)
	case tapForeign:
		r.recordForeign(e.client, e.ph, e.group)
	case tapUnexpected:
		r.recordUnexpected(e.client, e.ph, e.group)
	case tapConnEvent:
		r.recordEvent(e.client, e.ph, e.group, e.ev, e.d)
	case tapSubscribe:
		r.recordSubscribe(e.client, e.ph, e.group, e.d)
	case tapStageUnsent:
		r.recordStageUnsent(e.client, e.other, e.n, e.expected)
	case tapStageLostUnacked:
		r.recordStageLostUnacked(e.other, e.n)
	case tapLostLate:
		r.recordLostLate(e.ph, e.group, e.other, e.n)
	case tapStageLostLate:
		r.recordStageLostLate(e.other, e.n)
	case tapStageMisjudgedCopies:
		r.recordStageMisjudgedCopies(e.other, e.n, e.size)
	case tapAnswerSent:
		r.recordAnswerSent(e.client, e.ph, e.group, e.flag)
	case tapRequest:
		r.recordRequest(e.client, e.ph, e.group, int(e.n))
	case tapAnswer:
		r.recordAnswer(e.client, e.ph, e.group, e.flag, e.d, e.d2)
	case tapClean:
		r.recordClean(e.client, e.group, e.other, e.ph, int(e.expected), e.size, e.n, e.flag)
	case tapAmbiguousReceived:
		d := e.recv
		r.recordAmbiguousReceived(e.client, &d)
	default:
		panic("tapEvent.replay: unknown kind")
	}
}

// sameStats fails unless got has want's every counter per phase, group
// and stage, every histogram bucket for bucket, and the same timeline.
func sameStats(t *testing.T, name string, want *stats.Stats, got *split) {
	t.Helper()
	g := got.stats
	for i := range want.Phases {
		wp, gp := &want.Phases[i], &g.Phases[i]
		sameMetrics(t, name+": phase "+wp.Phase.String()+" total", &wp.Total, &gp.Total)
		for j := range wp.Groups {
			sameMetrics(t, name+": phase "+wp.Phase.String()+" group "+want.Groups[j].Name, &wp.Groups[j], &gp.Groups[j])
		}
	}
	if len(want.Stages) != len(g.Stages) {
		t.Fatalf("%s: %d stages, want %d", name, len(g.Stages), len(want.Stages))
	}
	for i := range want.Stages {
		sameMetrics(t, name+": stage "+want.Stages[i].Name, &want.Stages[i].Metrics, &g.Stages[i].Metrics)
	}
	if !reflect.DeepEqual(want.Timeline, g.Timeline) {
		for i := range min(len(want.Timeline), len(g.Timeline)) {
			if !reflect.DeepEqual(want.Timeline[i], g.Timeline[i]) {
				t.Errorf("%s: second %d:\n got %+v\nwant %+v", name, i, g.Timeline[i], want.Timeline[i])
				break
			}
		}
		if len(want.Timeline) != len(g.Timeline) {
			t.Errorf("%s: %d seconds, want %d", name, len(g.Timeline), len(want.Timeline))
		}
	}
	if !reflect.DeepEqual(want.Groups, g.Groups) {
		t.Errorf("%s: groups %+v, want %+v", name, g.Groups, want.Groups)
	}
}

// sameMetrics compares two cells: counters equal, histograms Equal.
func sameMetrics(t *testing.T, name string, want, got *stats.Metrics) {
	t.Helper()
	hists := func(m *stats.Metrics) []**hdrhistogram.Histogram {
		return []**hdrhistogram.Histogram{&m.Latency, &m.Ack, &m.Connect, &m.Subscribe, &m.Lag, &m.ReqResp.RTT}
	}
	w, g := *want, *got
	for i, wh := range hists(&w) {
		gh := hists(&g)[i]
		if !sameHist(*wh, *gh) {
			t.Errorf("%s: histogram %d differs (%d and %d samples)", name, i, count(*wh), count(*gh))
		}
		*wh, *gh = nil, nil
	}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("%s:\n got %+v\nwant %+v", name, g, w)
	}
}

func sameHist(a, b *hdrhistogram.Histogram) bool {
	if count(a) == 0 || count(b) == 0 {
		return count(a) == count(b)
	}
	return a.Equals(b)
}

func count(h *hdrhistogram.Histogram) int64 {
	if h == nil {
		return 0
	}
	return h.TotalCount()
}

// reportJSON is the JSON report of st judged by prog's thresholds.
func reportJSON(t *testing.T, prog *plans.Program, st *stats.Stats) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, report.Evaluate(prog.Plan, prog.Thresholds, st)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// reorderHook makes a broker deliver out of order: of every 7 QoS 0
// deliveries of one topic to one client it holds one back and writes it
// after the next, so the subscriber sees sequence k+1 before k.
type reorderHook struct {
	mqtt.HookBase
	mu      sync.Mutex
	held    map[string]packets.Packet
	n       map[string]int
	swapped atomic.Int64
}

const reorderOrigin = "\x00test-reorder"

func (h *reorderHook) ID() string           { return "test-reorder" }
func (h *reorderHook) Provides(b byte) bool { return b == mqtt.OnPacketEncode }

func (h *reorderHook) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type != packets.Publish || pk.FixedHeader.Qos != 0 || pk.Origin == reorderOrigin || !strings.HasPrefix(pk.TopicName, "ooo/") {
		return pk
	}
	key := cl.ID + "|" + pk.TopicName
	h.mu.Lock()
	if held, ok := h.held[key]; ok {
		delete(h.held, key)
		h.mu.Unlock()
		later := pk
		later.Origin = reorderOrigin
		// Written first, from inside this write but outside mochi's
		// client lock, as the broker's duplicate fault writes its copy.
		_ = cl.WritePacket(later)
		h.swapped.Add(1)
		return held
	}
	h.n[key]++
	if h.n[key]%7 != 0 {
		h.mu.Unlock()
		return pk
	}
	held := pk
	held.Origin = reorderOrigin
	held.Payload = slices.Clone(pk.Payload)
	h.held[key] = held
	h.mu.Unlock()
	pk.FixedHeader.Type = packets.Reserved // not written now
	return pk
}
