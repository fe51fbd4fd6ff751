package partial

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// ErrMismatch marks parts that are not of one run: different versions,
// run ids, plans, shard counts, assignments or common epochs, or a shard
// given twice. Merging them would add figures of different tests (exit
// 2).
var ErrMismatch = errors.New("the partial results are not of one run")

// MissingError says which shards' parts a merge lacks. Without them the
// deliveries their publishers implied are unknown, so loss cannot be
// computed: the run is incomplete (exit 3).
type MissingError struct {
	Missing []int
	Count   int
}

func (e *MissingError) Error() string {
	what := "shard " + joinInts(e.Missing)
	if len(e.Missing) > 1 {
		what = "shards " + joinInts(e.Missing)
	}
	return fmt.Sprintf("%s of %d missing: the expected deliveries of their publishers are unknown, so loss cannot be computed", what, e.Count)
}

// joinInts lists shard numbers, the first ten of them.
func joinInts(ns []int) string {
	const shown = 10
	s := make([]string, 0, min(len(ns), shown)+1)
	for _, n := range ns[:min(len(ns), shown)] {
		s = append(s, fmt.Sprint(n))
	}
	if len(ns) > shown {
		s = append(s, fmt.Sprintf("and %d more", len(ns)-shown))
	}
	return strings.Join(s, ", ")
}

// Options tune a merge.
type Options struct {
	// AllowMissing merges what there is when shards are missing: the
	// result is incomplete (its Incomplete names them), never a pass.
	AllowMissing bool
}

// Merged is the merge of a run's parts.
type Merged struct {
	// Stats is the run as one process would have measured it.
	Stats *stats.Stats
	// Plan, RunID, Count and Assignment are the parts' (all equal):
	// Assignment's Index is 0.
	Plan       PlanSource
	RunID      string
	Count      int
	Assignment Shard
	// Missing lists the shards without a part (AllowMissing only).
	Missing []int
}

// Merge checks that files are the parts of one run, each shard once,
// and merges them: counters added, histograms merged bucket by bucket,
// the derived figures recomputed once (stats.FinishPhases), phase windows
// from the earliest start to the latest end, the timeline aligned by
// second with each second's percentiles recomputed from the merged
// histograms. The error wraps ErrMismatch or is a *MissingError.
func Merge(files []*File, opts Options) (*Merged, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no partial result given", ErrMismatch)
	}
	missing, err := checkParts(files)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 && !opts.AllowMissing {
		return nil, &MissingError{Missing: missing, Count: files[0].Shard.Count}
	}
	slices.SortFunc(files, func(a, b *File) int { return a.Shard.Index - b.Shard.Index })
	st, err := mergeStats(files)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		reason := (&MissingError{Missing: missing, Count: files[0].Shard.Count}).Error()
		if st.Incomplete != "" {
			reason += "; " + st.Incomplete
		}
		st.Incomplete = reason
	}
	a := files[0].Shard
	a.Index = 0
	return &Merged{Stats: st, Plan: files[0].Plan, RunID: files[0].RunID, Count: a.Count, Assignment: a, Missing: missing}, nil
}

// checkParts refuses parts of different runs and returns the shards
// without a part.
func checkParts(files []*File) ([]int, error) {
	first := files[0]
	seen := make([]bool, first.Shard.Count)
	var errs []error
	for _, f := range files {
		var what []string
		if f.RunID != first.RunID {
			what = append(what, fmt.Sprintf("run id %q, not %q", f.RunID, first.RunID))
		}
		if f.PlanSHA256 != first.PlanSHA256 || f.Plan.Hash() != f.PlanSHA256 {
			what = append(what, "another plan (plan_sha256 differs)")
		}
		if f.Shard.Count != first.Shard.Count {
			what = append(what, fmt.Sprintf("%d shards, not %d", f.Shard.Count, first.Shard.Count))
		}
		if f.Shard.Assignment != first.Shard.Assignment || f.Shard.AssignSHA256 != first.Shard.AssignSHA256 {
			what = append(what, "another assignment of clients to shards")
		}
		if f.Clock.EpochWallNS != first.Clock.EpochWallNS {
			// The shards of one run share the coordinator's epoch: a run
			// id given again (a Job re-run, a script's fixed --run-id)
			// makes parts of other runs that pass every other check.
			what = append(what, "another run of it (its common epoch differs: the run id was used again)")
		}
		if len(f.Groups) != len(first.Groups) || len(f.Stages) != len(first.Stages) {
			what = append(what, "other groups or stages")
		}
		if len(what) > 0 {
			errs = append(errs, fmt.Errorf("shard %d: %s", f.Shard.Index, strings.Join(what, ", ")))
			continue
		}
		if seen[f.Shard.Index] {
			errs = append(errs, fmt.Errorf("shard %d of %d given twice", f.Shard.Index, f.Shard.Count))
		}
		seen[f.Shard.Index] = true
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrMismatch, errors.Join(errs...))
	}
	var missing []int
	for i, ok := range seen {
		if !ok {
			missing = append(missing, i)
		}
	}
	return missing, nil
}

// mergeStats adds the parts (sorted by shard) into one run's stats.
func mergeStats(files []*File) (*stats.Stats, error) {
	first := files[0]
	nGroups := len(first.Groups)
	st := &stats.Stats{BrokerURL: first.BrokerURL, Phases: make([]stats.PhaseStats, phase.Count)}
	for i, p := range phase.All {
		st.Phases[i] = stats.PhaseStats{Phase: p, Groups: make([]stats.Metrics, nGroups)}
	}
	for _, g := range first.Groups {
		st.Groups = append(st.Groups, stats.GroupInfo{Name: g.Name})
	}
	for i, s := range first.Stages {
		st.Stages = append(st.Stages, stats.StageStats{Index: i, Name: s.Name, Start: time.Duration(s.StartNS), End: time.Duration(s.EndNS)})
	}
	var incomplete []string
	noCross := false
	for k, f := range files {
		label := fmt.Sprintf("shard %d", f.Shard.Index)
		if k == 0 || f.Started.Before(st.Started) {
			st.Started = f.Started
		}
		st.Elapsed = max(st.Elapsed, time.Duration(f.ElapsedNS))
		for i := range f.Phases {
			fp, ps := &f.Phases[i], &st.Phases[i]
			start, end := time.Duration(fp.StartNS), time.Duration(fp.EndNS)
			if k == 0 {
				ps.Start, ps.End = start, end
			} else {
				ps.Start, ps.End = min(ps.Start, start), max(ps.End, end)
			}
			for g, c := range fp.Groups {
				m, err := c.metrics()
				if err != nil {
					return nil, fmt.Errorf("%s: phase %s, group %s: %w", label, fp.Name, first.Groups[g].Name, err)
				}
				ps.Groups[g].Merge(&m)
			}
		}
		for i, s := range f.Stages {
			m, err := s.Cell.metrics()
			if err != nil {
				return nil, fmt.Errorf("%s: stage %s: %w", label, s.Name, err)
			}
			st.Stages[i].Metrics.Merge(&m)
		}
		for g, fg := range f.Groups {
			if fg.Name != first.Groups[g].Name {
				return nil, fmt.Errorf("%w: %s: group %d is %q, not %q", ErrMismatch, label, g, fg.Name, first.Groups[g].Name)
			}
			sg := &st.Groups[g]
			sg.Clients += fg.Clients
			sg.Connected += fg.Connected
			sg.ConnectedAtEnd += fg.ConnectedAtEnd
			sg.Lost += fg.Lost
		}
		if f.Broker != nil {
			if st.Broker == nil {
				st.Broker = &stats.Broker{}
			}
			b := st.Broker
			b.MessagesReceived += f.Broker.MessagesReceived
			b.MessagesSent += f.Broker.MessagesSent
			b.MessagesDropped += f.Broker.MessagesDropped
			b.InflightDropped += f.Broker.InflightDropped
			b.ClientsMaximum += f.Broker.ClientsMaximum
		}
		st.BrokerApart = st.BrokerApart || f.BrokerApart
		if !st.CountersStart.Sampled() && !st.CountersEnd.Sampled() && (len(f.CountersStart) > 0 || len(f.CountersEnd) > 0) {
			if err := f.brokerCounters(st); err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
		}
		st.Interrupted = st.Interrupted || f.Interrupted
		if f.Incomplete != "" {
			if len(files) == 1 {
				incomplete = append(incomplete, f.Incomplete)
			} else {
				incomplete = append(incomplete, label+": "+f.Incomplete)
			}
		}
		if st.BrokerGone == "" {
			st.BrokerGone = f.BrokerGone
		}
		st.ErrorSamples = appendDistinct(st.ErrorSamples, f.ErrorSamples)
		st.Notices = appendDistinct(st.Notices, f.Notices)
		st.InFlightAtEnd += f.InFlightAtEnd
		st.DrainQuiet = max(st.DrainQuiet, time.Duration(f.DrainQuietNS))
		st.DrainEndRate += f.DrainEndRate
		st.Drain = max(st.Drain, time.Duration(f.DrainNS))
		st.Procs += f.Procs
		switch {
		case f.Cross == nil:
			noCross = true
		case st.Cross == nil:
			c := *f.Cross
			st.Cross = &c
		default:
			st.Cross.Add(f.Cross)
		}
	}
	if noCross {
		st.Cross = nil // a part without it: the sums would miss its share
	}
	st.Incomplete = strings.Join(incomplete, "; ")
	st.Clock = mergeClock(files)
	stats.FinishPhases(st.Phases, st.Stages)
	tl, err := mergeTimeline(files, st.Groups)
	if err != nil {
		return nil, err
	}
	st.Timeline = tl
	return st, nil
}

// brokerCounters sets st's broker counter readings from f's: only one
// process samples the broker, so they are taken from the first part that
// has them, never added.
func (f *File) brokerCounters(st *stats.Stats) error {
	var err error
	if st.CountersStart, err = f.CountersStart.counters(); err != nil {
		return err
	}
	if st.CountersEnd, err = f.CountersEnd.counters(); err != nil {
		return err
	}
	for _, name := range f.CountersUnchanged {
		c, ok := brokerstat.CounterByName(name)
		if !ok {
			return fmt.Errorf("unknown broker counter %q", name)
		}
		st.CountersUnchanged = append(st.CountersUnchanged, c)
	}
	return nil
}

// appendDistinct appends the strings of add not in dst yet.
func appendDistinct(dst, add []string) []string {
	for _, s := range add {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// mergeTimeline aligns the parts' timelines by second (each shard's i-th
// second since the common epoch), adds their counts and recomputes each
// second's percentiles from the merged latency histograms, as a single
// run computes them from its stripes'. The histograms are added count by
// count (every histogram has stats.NewHistogram's geometry, checked when
// decoded), which is what Histogram.Merge does value by value, several
// times faster: a long run has a histogram per group and second.
func mergeTimeline(files []*File, groups []stats.GroupInfo) ([]stats.Second, error) {
	n := 0
	for _, f := range files {
		n = max(n, len(f.Timeline))
	}
	out := make([]stats.Second, n)
	acc := make([]counts, len(groups))
	var total counts
	for i := range out {
		s := &out[i]
		have := false
		for g := range acc {
			acc[g].reset()
		}
		for _, f := range files {
			if i >= len(f.Timeline) {
				continue
			}
			if err := addSecond(s, &f.Timeline[i], have, acc); err != nil {
				return nil, fmt.Errorf("shard %d: timeline second %d: %w", f.Shard.Index, i, err)
			}
			have = true
		}
		total.reset()
		for g := range s.Groups {
			s.Groups[g].Group = groups[g].Name
			if h := acc[g].histogram(); h != nil {
				gs := &s.Groups[g]
				gs.P50, gs.P99, gs.Max = stats.Quantiles(h)
				total.add(acc[g].c)
			}
		}
		if h := total.histogram(); h != nil {
			s.P50, s.P99, s.Max = stats.Quantiles(h)
		}
	}
	return out, nil
}

// counts accumulates histograms of stats.NewHistogram's geometry as their
// bucket counts.
type counts struct {
	c   []int64
	any bool
}

func (a *counts) reset() {
	clear(a.c)
	a.any = false
}

// add adds a histogram's bucket counts.
func (a *counts) add(c []int64) {
	if a.c == nil {
		a.c = make([]int64, len(c))
	}
	for i, v := range c[:min(len(c), len(a.c))] {
		a.c[i] += v
	}
	a.any = true
}

// histogram is the sum as a histogram, nil when nothing was added.
func (a *counts) histogram() *hdrhistogram.Histogram {
	if !a.any {
		return nil
	}
	h := hdrhistogram.Import(&hdrhistogram.Snapshot{LowestTrackableValue: geometry[0], HighestTrackableValue: geometry[1], SignificantFigures: geometry[2], Counts: a.c})
	if h.TotalCount() == 0 {
		return nil
	}
	return h
}

// addSecond adds one part's second into s; have says s holds another
// part's already.
func addSecond(s *stats.Second, fs *Second, have bool, acc []counts) error {
	ph, _ := phase.Parse(fs.Phase)
	at := time.Duration(fs.AtNS)
	if !have || at > s.At {
		s.At, s.Phase = at, ph
	}
	s.Connected += fs.Connected
	s.Lost += fs.Lost
	s.Sent += fs.Sent
	s.Received += fs.Received
	s.Errors += fs.Errors
	s.Disconnects += fs.Disconnects
	s.LagMax = max(s.LagMax, time.Duration(fs.LagMaxNS))
	if fs.Broker != nil && !s.Broker.Sampled {
		s.Broker = stats.ProcSample{Sampled: true, CPU: fs.Broker.CPU, RSS: fs.Broker.RSS}
	}
	if fs.Self != nil {
		// Every shard's generator: CPU and memory add up.
		s.Self.Sampled = true
		s.Self.CPU += fs.Self.CPU
		s.Self.RSS += fs.Self.RSS
	}
	g, err := fs.Gen.second()
	if err != nil {
		return err
	}
	// The worst shard's: a second is disturbed when one shard was.
	s.Gen.Merge(g)
	if len(fs.Counters) > 0 && !s.Counters.Sampled() {
		c, err := fs.Counters.counters()
		if err != nil {
			return err
		}
		s.Counters = c
	}
	if len(fs.Groups) > 0 && s.Groups == nil {
		s.Groups = make([]stats.GroupSecond, len(acc))
	}
	for g, fg := range fs.Groups {
		gs := &s.Groups[g]
		gs.Connected += fg.Connected
		gs.Lost += fg.Lost
		gs.Sent += fg.Sent
		gs.Received += fg.Received
		gs.Errors += fg.Errors
		gs.Disconnects += fg.Disconnects
		gs.Acked += fg.Acked
		gs.Duplicates += fg.Duplicates
		gs.LagMax = max(gs.LagMax, time.Duration(fg.LagMaxNS))
		h, err := decodeHist(fg.Latency)
		if err != nil {
			return fmt.Errorf("group %d: %w", g, err)
		}
		if h != nil {
			acc[g].add(h.Export().Counts)
		}
	}
	return nil
}
