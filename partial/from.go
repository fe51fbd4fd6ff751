package partial

import (
	"fmt"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// Meta is what a partial says of itself beyond the figures.
type Meta struct {
	MqplanVersion string
	RunID         string
	Plan          PlanSource
	Shard         Shard
	Clock         Clock
}

// SingleProcess is Clock.Source for a run in one process: one clock, so
// no offset and no uncertainty.
const SingleProcess = "single process"

// SameHost is Clock.Source for a shard on the coordinator's host: it
// reads the coordinator's clocks, so its epoch is aligned on
// CLOCK_MONOTONIC within the uncertainty (the clock reads' gaps, under a
// microsecond) and cannot drift (coord.Shard.SameHost).
const SameHost = stats.SourceSameHost

// FromStats is the partial of a shard's stats, whose per-second latency
// histograms c kept (c's seconds are st.Timeline's, in order). The
// derived figures of st (Lost, totals) are left out: the merge
// recomputes them.
func FromStats(st *stats.Stats, c *Collector, meta Meta) (*File, error) {
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return nil, c.err
		}
		if len(c.seconds) != len(st.Timeline) {
			return nil, fmt.Errorf("the timeline has %d seconds but %d seconds of latency histograms were kept", len(st.Timeline), len(c.seconds))
		}
	}
	f := &File{
		Version: Version, MqplanVersion: meta.MqplanVersion, RunID: meta.RunID,
		Plan: meta.Plan, PlanSHA256: meta.Plan.Hash(), Shard: meta.Shard, Clock: meta.Clock,
		Started: st.Started, ElapsedNS: int64(st.Elapsed), BrokerURL: plans.RedactURL(st.BrokerURL),
		Interrupted: st.Interrupted, Incomplete: st.Incomplete, BrokerGone: st.BrokerGone,
		Broker: st.Broker, BrokerApart: st.BrokerApart, CountersStart: countersOf(st.CountersStart), CountersEnd: countersOf(st.CountersEnd),
		ErrorSamples: st.ErrorSamples, InFlightAtEnd: st.InFlightAtEnd, DrainQuietNS: int64(st.DrainQuiet),
		DrainEndRate: st.DrainEndRate, DrainNS: int64(st.Drain),
		Notices: st.Notices, Procs: st.Procs, Cross: st.Cross,
	}
	f.Clock.FromShards = fromShardsOf(st.Clock, meta.Shard.Count)
	for _, c := range st.CountersUnchanged {
		f.CountersUnchanged = append(f.CountersUnchanged, c.String())
	}
	for _, g := range st.Groups {
		f.Groups = append(f.Groups, Group{Name: g.Name, Clients: g.Clients, Connected: g.Connected, ConnectedAtEnd: g.ConnectedAtEnd, Lost: g.Lost})
	}
	var err error
	f.Phases = make([]Phase, phase.Count)
	for i, p := range phase.All {
		fp := &f.Phases[i]
		fp.Name = p.String()
		fp.Groups = make([]*Cell, len(st.Groups))
		ps := st.Phase(p)
		if ps == nil {
			continue
		}
		fp.StartNS, fp.EndNS = int64(ps.Start), int64(ps.End)
		if len(ps.Groups) != len(st.Groups) {
			return nil, fmt.Errorf("phase %s has %d groups, the run %d", p, len(ps.Groups), len(st.Groups))
		}
		for g := range ps.Groups {
			if fp.Groups[g], err = cellOf(&ps.Groups[g]); err != nil {
				return nil, fmt.Errorf("phase %s, group %s: %w", p, st.Groups[g].Name, err)
			}
		}
	}
	for _, s := range st.Stages {
		fs := Stage{Name: s.Name, StartNS: int64(s.Start), EndNS: int64(s.End)}
		if fs.Cell, err = cellOf(&s.Metrics); err != nil {
			return nil, fmt.Errorf("stage %s: %w", s.Name, err)
		}
		f.Stages = append(f.Stages, fs)
	}
	for i := range st.Timeline {
		f.Timeline = append(f.Timeline, secondOf(&st.Timeline[i], i, c))
	}
	return f, nil
}

// secondOf is the i-th second of the timeline with its histograms.
func secondOf(s *stats.Second, i int, c *Collector) Second {
	out := Second{AtNS: int64(s.At), Phase: s.Phase.String(), Connected: s.Connected, Lost: s.Lost,
		Sent: s.Sent, Received: s.Received, Errors: s.Errors, Disconnects: s.Disconnects, LagMaxNS: int64(s.LagMax),
		Counters: countersOf(s.Counters), Broker: procOf(s.Broker), Self: procOf(s.Self), Gen: genOf(s.Gen)}
	for g, gs := range s.Groups {
		out.Groups = append(out.Groups, GroupSecond{Connected: gs.Connected, Lost: gs.Lost, Sent: gs.Sent, Received: gs.Received,
			Errors: gs.Errors, Disconnects: gs.Disconnects, Acked: gs.Acked, Duplicates: gs.Duplicates,
			LagMaxNS: int64(gs.LagMax), Latency: c.latency(i, g)})
	}
	return out
}
