// Package partial owns the partial result of a sharded run: what one
// shard (one process of a run split across processes or machines)
// measured, in a form that merges exactly, and the merge itself. A
// partial holds raw data only: counters per phase × group and per stage,
// HDR histograms in the standard V2 compressed encoding, the per-second
// timeline with each second's latency histograms, and the plan the run
// was judged by. It never holds a per-shard Lost or verdict: the merge
// adds the counters, recomputes the derived figures once with
// stats.FinishPhases (the code a single run uses), and hands one
// stats.Stats to the report, so that merged parts are judged exactly as
// one process would have been.
//
// It reads and writes files' contents, never the file system, and runs
// nothing: cmd/mqplan reads the files and picks the exit code.
package partial

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// Version is the format this mqplan writes and the only one it reads
// (the file's "mqplan_partial"). A change that an older reader would
// misread takes a new version.
const Version = 1

// MaxSize bounds a partial file: a run's cells are a few KiB each and a
// second of timeline a few KiB per receiving group, so an hour-long run
// of many groups stays well below it, and a wrong file (a log, a dump)
// is refused before it costs memory.
const MaxSize = 256 << 20

// File is one shard's partial result, the JSON document of a partial
// file. Times are nanoseconds: offsets from the run's epoch unless said.
type File struct {
	// Version is Version; the reader refuses any other.
	Version int `json:"mqplan_partial"`
	// MqplanVersion is the writer's build, for the reader of a refusal,
	// as a result records it (report.Result.MqplanVersion: "v0.4.0
	// (go1.26.0, rev 8be232e0a1b2)").
	MqplanVersion string `json:"mqplan_version,omitempty"`
	// RunID is the run's id, the same on every shard: it feeds client ids
	// and topics, and a merge refuses parts of different runs.
	RunID string `json:"run_id"`
	// Plan is the plan the run was judged by; PlanSHA256 identifies it
	// (PlanSource.Hash), equal on every part of one run.
	Plan       PlanSource `json:"plan"`
	PlanSHA256 string     `json:"plan_sha256"`
	Shard      Shard      `json:"shard"`
	Clock      Clock      `json:"clock"`
	// Started is the shard's wall-clock start; ElapsedNS its run's length.
	Started   time.Time `json:"started"`
	ElapsedNS int64     `json:"elapsed_ns"`
	// BrokerURL is where the shard connected, user information redacted.
	BrokerURL string `json:"broker_url,omitempty"`
	// Interrupted and Incomplete are the shard's own (stats.Stats).
	Interrupted bool   `json:"interrupted,omitempty"`
	Incomplete  string `json:"incomplete,omitempty"`
	BrokerGone  string `json:"broker_gone,omitempty"`
	// Phases holds every phase, in phase order, each with one cell per
	// plan group in plan order.
	Phases []Phase `json:"phases"`
	Stages []Stage `json:"stages,omitempty"`
	// Groups are the shard's own clients per plan group.
	Groups   []Group  `json:"groups"`
	Timeline []Second `json:"timeline,omitempty"`
	// Broker is the embedded broker's counters, when the shard ran it;
	// BrokerApart says it ran in a process of its own (stats.Stats).
	Broker            *stats.Broker `json:"broker,omitempty"`
	BrokerApart       bool          `json:"broker_apart,omitempty"`
	CountersStart     Counters      `json:"counters_start,omitempty"`
	CountersEnd       Counters      `json:"counters_end,omitempty"`
	CountersUnchanged []string      `json:"counters_unchanged,omitempty"`
	ErrorSamples      []string      `json:"error_samples,omitempty"`
	InFlightAtEnd     int64         `json:"in_flight_at_end,omitempty"`
	DrainQuietNS      int64         `json:"drain_quiet_ns,omitempty"`
	// DrainEndRate and DrainNS are the shard's stats.Stats.DrainEndRate
	// and Drain: the merge sums the rates and keeps the longest drain.
	DrainEndRate int64    `json:"drain_end_rate,omitempty"`
	DrainNS      int64    `json:"drain_ns,omitempty"`
	Notices      []string `json:"notices,omitempty"`
	Procs        int      `json:"procs,omitempty"`
	// Cross is the shard's share of what the broker's counters are
	// checked against (stats.Cross), summed by the merge so that the
	// check runs once on the whole run; absent from an older mqplan's
	// part, and then the merged run is not checked.
	Cross *stats.Cross `json:"cross,omitempty"`
	// MAC is the part's signature (sign.go), its last member when it was
	// signed: the reader checks it with Verify on the file's bytes, and
	// the merge never reads it.
	MAC string `json:"mqplan_mac,omitempty"`
}

// Shard says which part of the run a file is.
type Shard struct {
	// Index is the shard's number, 0 ≤ Index < Count; a merge wants every
	// index once.
	Index int `json:"index"`
	Count int `json:"count"`
	// Assignment names the algorithm that chose each shard's clients and
	// AssignSHA256 hashes its result: parts of one run agree on both.
	// Empty for a single process (Count 1).
	Assignment   string `json:"assignment,omitempty"`
	AssignSHA256 string `json:"assign_sha256,omitempty"`
}

// Clock is the shard's time base: the common epoch and publish start
// (Unix ns) and its offset to the coordinator's clock with the
// uncertainty of that offset. A single process writes its own epoch and
// zero offset ("single process": there is nothing to be uncertain of).
//
// The rest was added to format 1 later, each left out when unknown: a
// part without them (an older mqplan's) still merges, its clock figures
// unknown (stats.Clock).
type Clock struct {
	EpochWallNS    int64  `json:"epoch_wall_ns"`
	PubStartWallNS int64  `json:"pub_start_wall_ns"`
	OffsetNS       int64  `json:"offset_ns"`
	UncertaintyNS  int64  `json:"uncertainty_ns"`
	Source         string `json:"source"`
	// DriftNS is the coordinator's clock minus the shard's estimate of
	// it when the run had drained, measured within ±DriftUncertaintyNS:
	// the alignment error built up over the run (stats.ShardClock.Drift).
	DriftNS            *int64 `json:"drift_ns,omitempty"`
	DriftUncertaintyNS int64  `json:"drift_uncertainty_ns,omitempty"`
	// NTP is the host's clock discipline (adjtimex), when it was read.
	NTP *NTP `json:"ntp,omitempty"`
	// FromShards has one entry per shard of the run: the deliveries this
	// shard's subscribers received from that shard's publishers and the
	// least latency among them, from which the merge splits local from
	// cross-shard latency and cross-checks the offsets.
	FromShards []FromShard `json:"from_shards,omitempty"`
}

// NTP is stats.NTP as a part carries it.
type NTP struct {
	Synced     bool  `json:"synced"`
	MaxErrorNS int64 `json:"max_error_ns"`
	EstErrorNS int64 `json:"est_error_ns"`
}

// FromShard is the deliveries from one shard's publishers
// (stats.ShardPair, To being the part's own shard).
type FromShard struct {
	Shard      int   `json:"shard"`
	Deliveries int64 `json:"deliveries"`
	MinNS      int64 `json:"min_ns"`
}

// Phase is one phase's window and cells.
type Phase struct {
	Name    string  `json:"name"`
	StartNS int64   `json:"start_ns"`
	EndNS   int64   `json:"end_ns"`
	Groups  []*Cell `json:"groups"`
}

// Stage is one stage's window and cell (stats.StageStats).
type Stage struct {
	Name    string `json:"name"`
	StartNS int64  `json:"start_ns"`
	EndNS   int64  `json:"end_ns"`
	Cell    *Cell  `json:"cell,omitempty"`
}

// Group is one plan group's clients on the shard (stats.GroupInfo).
type Group struct {
	Name           string `json:"name"`
	Clients        int    `json:"clients"`
	Connected      int    `json:"connected"`
	ConnectedAtEnd int    `json:"connected_at_end"`
	Lost           int    `json:"lost"`
}

// Second is one second of the shard's timeline: its counts, and per
// group the second's latency histogram, from which the merge recomputes
// P50, P99 and Max (percentiles of parts cannot be combined).
type Second struct {
	AtNS        int64         `json:"at_ns"`
	Phase       string        `json:"phase"`
	Connected   int           `json:"connected,omitempty"`
	Lost        int           `json:"lost,omitempty"`
	Sent        int64         `json:"sent,omitempty"`
	Received    int64         `json:"received,omitempty"`
	Errors      int64         `json:"errors,omitempty"`
	Disconnects int64         `json:"disconnects,omitempty"`
	LagMaxNS    int64         `json:"lag_max_ns,omitempty"`
	Groups      []GroupSecond `json:"groups,omitempty"`
	Broker      *Proc         `json:"broker,omitempty"`
	Self        *Proc         `json:"self,omitempty"`
	Counters    Counters      `json:"counters,omitempty"`
	// Gen is this shard's own disturbance in the second
	// (stats.GenSecond), when it was measured: each shard measures
	// itself, and the merge keeps the worst shard's.
	Gen *Gen `json:"gen,omitempty"`
}

// Gen is a shard's disturbance over a second: its threads' wait for a
// CPU and the mean of it per timeslice, its CPU use as a share of the
// CPUs it was given, and the machine's CPU pressure (when HasPressure).
type Gen struct {
	WaitNS      int64   `json:"wait_ns"`
	DelayNS     int64   `json:"delay_ns"`
	Busy        float64 `json:"busy"`
	PressureNS  int64   `json:"pressure_ns,omitempty"`
	HasPressure bool    `json:"has_pressure,omitempty"`
}

func genOf(g stats.GenSecond) *Gen {
	if !g.Sampled {
		return nil
	}
	return &Gen{WaitNS: int64(g.Wait), DelayNS: int64(g.Delay), Busy: g.Busy, PressureNS: int64(g.Pressure), HasPressure: g.HasPressure}
}

// second is g as a stats.GenSecond; figures no measurement gives are
// refused.
func (g *Gen) second() (stats.GenSecond, error) {
	if g == nil {
		return stats.GenSecond{}, nil
	}
	if g.WaitNS < 0 || g.DelayNS < 0 || g.PressureNS < 0 || !(g.Busy >= 0 && g.Busy <= 1e6) {
		return stats.GenSecond{}, fmt.Errorf("gen: wait_ns, delay_ns, pressure_ns and busy must not be negative, got %+v", *g)
	}
	return stats.GenSecond{Sampled: true, Wait: time.Duration(g.WaitNS), Delay: time.Duration(g.DelayNS), Busy: g.Busy,
		Pressure: time.Duration(g.PressureNS), HasPressure: g.HasPressure}, nil
}

// Proc is a process's CPU (percent of one core) and resident memory
// (bytes) over a second (stats.ProcSample), when it was sampled.
type Proc struct {
	CPU float64 `json:"cpu"`
	RSS int64   `json:"rss"`
}

func procOf(p stats.ProcSample) *Proc {
	if !p.Sampled {
		return nil
	}
	return &Proc{CPU: p.CPU, RSS: p.RSS}
}

// GroupSecond is one group's share of a Second (stats.GroupSecond), with
// its latency histogram instead of percentiles.
type GroupSecond struct {
	Connected   int    `json:"connected,omitempty"`
	Lost        int    `json:"lost,omitempty"`
	Sent        int64  `json:"sent,omitempty"`
	Received    int64  `json:"received,omitempty"`
	Errors      int64  `json:"errors,omitempty"`
	Disconnects int64  `json:"disconnects,omitempty"`
	Acked       int64  `json:"acked,omitempty"`
	Duplicates  int64  `json:"duplicates,omitempty"`
	LagMaxNS    int64  `json:"lag_max_ns,omitempty"`
	Latency     string `json:"latency,omitempty"`
}

// Counters is a broker counter reading (brokerstat.Counters) by name.
type Counters map[string]int64

func countersOf(cs brokerstat.Counters) Counters { return cs.ByName() }

func (cs Counters) counters() (brokerstat.Counters, error) { return brokerstat.FromNames(cs) }

// Write writes f as indented JSON.
func Write(w io.Writer, f *File) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(f)
}

// Read reads one partial file's contents, at most MaxSize bytes, and
// checks its shape (Check); name is the file's name for the errors.
func Read(name string, r io.Reader) (*File, error) { return readLimited(name, r, MaxSize) }

func readLimited(name string, r io.Reader, limit int64) (*File, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB, too large for a partial result", name, limit>>20)
	}
	return Parse(name, data)
}

// Parse decodes a partial file's bytes and checks them (Check). Unknown
// fields are refused: a field this mqplan does not know could change the
// figures.
func Parse(name string, data []byte) (*File, error) {
	var probe struct {
		Version *int `json:"mqplan_partial"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a partial result: %w", name, err)
	}
	switch {
	case probe.Version == nil:
		return nil, fmt.Errorf("%s: not a partial result (no \"mqplan_partial\" version; mqplan run --partial FILE writes one)", name)
	case *probe.Version != Version:
		return nil, fmt.Errorf("%s: partial format version %d, this mqplan reads version %d only: merge with the mqplan that wrote it", name, *probe.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &f, nil
}

// maxGroups and maxStages bound what a partial may declare, as the plan
// language bounds plans (plans/limits.go), so that a forged file cannot
// make the merge allocate without bound.
const (
	maxGroups  = 10_000
	maxStages  = 10_000
	maxSeconds = 7 * 24 * 3600
	// maxShards bounds the shard count: far more processes than any run
	// of a plan's bounded clients could use.
	maxShards = 100_000
)

// Check verifies what the merge relies on: the shard numbers, every phase
// once in order with a cell per group, the groups' names, bounded sizes.
func (f *File) Check() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if f.Shard.Count < 1 || f.Shard.Count > maxShards || f.Shard.Index < 0 || f.Shard.Index >= f.Shard.Count {
		add("shard %d of %d: want 0 ≤ index < count ≤ %d", f.Shard.Index, f.Shard.Count, maxShards)
	}
	if len(f.Groups) > maxGroups || len(f.Stages) > maxStages || len(f.Timeline) > maxSeconds {
		add("%d groups, %d stages, %d seconds: more than a plan can have", len(f.Groups), len(f.Stages), len(f.Timeline))
		return errors.Join(errs...)
	}
	if n := len(f.Clock.FromShards); n != 0 && n != f.Shard.Count {
		add("clock: %d from_shards entries for %d shards", n, f.Shard.Count)
	}
	for i, p := range f.Clock.FromShards {
		if p.Shard != i || p.Deliveries < 0 {
			add("clock: from_shards[%d] is shard %d with %d deliveries: want shard %d, deliveries ≥ 0", i, p.Shard, p.Deliveries, i)
			break
		}
	}
	if len(f.Phases) != phase.Count {
		add("%d phases, want %d", len(f.Phases), phase.Count)
	}
	for i, p := range f.Phases {
		if i < phase.Count && p.Name != phase.All[i].String() {
			add("phases[%d] is %q, want %q", i, p.Name, phase.All[i])
		}
		if len(p.Groups) != len(f.Groups) {
			add("phase %s has %d group cells for %d groups", p.Name, len(p.Groups), len(f.Groups))
		}
	}
	for i, s := range f.Timeline {
		if _, ok := phase.Parse(s.Phase); !ok {
			add("timeline[%d]: unknown phase %q", i, s.Phase)
		}
		if len(s.Groups) != 0 && len(s.Groups) != len(f.Groups) {
			add("timeline[%d] has %d groups for %d", i, len(s.Groups), len(f.Groups))
		}
	}
	return errors.Join(errs...)
}
