package stats

import (
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
)

// PhaseStats is one phase of the run as it happened.
type PhaseStats struct {
	// Phase says which phase this is; Stats.Phases is indexed by it.
	Phase phase.Phase
	// Start and End are offsets from the run's start. A phase that the plan
	// does not have (no warmup, say) has Start == End.
	Start, End time.Duration
	// Total merges every group.
	Total Metrics
	// Groups holds one Metrics per plan group, in plan order.
	Groups []Metrics
}

// Duration is how long the phase lasted.
func (p *PhaseStats) Duration() time.Duration { return p.End - p.Start }

// GroupInfo describes one group's clients at the end of the run.
type GroupInfo struct {
	Name string
	// Clients is the group's planned count; Connected the number that
	// completed CONNECT at least once; ConnectedAtEnd the number still
	// connected when the run ended; Lost the number whose connection
	// dropped and did not come back (Connected - ConnectedAtEnd).
	Clients, Connected, ConnectedAtEnd, Lost int
}

// Second is one entry of the per-second timeline: figures for the second
// that ended At after the run's start. It holds summaries, never a whole
// histogram, so a run of any length keeps flat memory.
type Second struct {
	At        time.Duration
	Phase     phase.Phase
	Connected int
	// Lost is the number of clients whose connection was down at that
	// moment (dropped and not yet back).
	Lost                   int
	Sent, Received, Errors int64
	Disconnects            int64
	P50, P99, Max          time.Duration // latency of deliveries received in that second
	LagMax                 time.Duration
	// Groups splits the second by plan group, in plan order (as
	// Stats.Groups), so that a chart or a CSV can show each group's own
	// rates and latency over time. Its counts add up exactly to the
	// second's: the sum over groups of Sent is Sent, and so on. Nil in a
	// timeline recorded before groups were kept per second.
	Groups []GroupSecond
	// Broker and Self are the broker process's (when the plan's
	// broker.metrics names one) and mqplan's own CPU and memory, read from
	// /proc at the end of the second (package procstat).
	Broker, Self ProcSample
	// Gen is how disturbed mqplan itself, the load generator, was during
	// the second (its threads' wait for a CPU, the machine's CPU
	// pressure); not Sampled where there is no /proc.
	Gen GenSecond
	// Counters are the broker's own counters as last reported when the
	// second was taken ($SYS or Prometheus, when the plan's
	// broker.metrics asks for them; package brokerstat): not Sampled()
	// when none had arrived, or none were asked for.
	Counters brokerstat.Counters
}

// ProcSample is one process's CPU and memory over one second of the
// timeline.
type ProcSample struct {
	// Sampled is false when the process was not read that second (no
	// broker.metrics, not Linux, or the process had gone): CPU and RSS
	// are then not measurements, and a report leaves the second out.
	Sampled bool
	// CPU is the CPU time used during the second, in percent of one core
	// (user + system; 200 means two cores busy).
	CPU float64
	// RSS is the resident memory at the end of the second, in bytes.
	RSS int64
}

// GenSecond is the load generator's own disturbance over one second of
// the timeline: what says whether mqplan, rather than the broker, was
// short of CPU (package report judges it).
type GenSecond struct {
	// Sampled is false when it was not read that second (not Linux, a
	// kernel without schedstat, the run's last partial second).
	Sampled bool
	// Wait is how long mqplan's threads, summed, waited in the run queue
	// for a CPU during the second.
	Wait time.Duration
	// Delay is the mean of that wait each time one of its threads was
	// given a CPU (the wait over the count of timeslices): how late,
	// on average, a send or a receive ran once it was due.
	Delay time.Duration
	// Busy is mqplan's CPU use during the second as a share of the CPUs
	// it was given (Stats.Procs): 1 is all of them busy.
	Busy float64
	// Pressure is how long some runnable task of the machine waited for a
	// CPU during the second (/proc/pressure/cpu "some"), when HasPressure.
	Pressure    time.Duration
	HasPressure bool
}

// Merge makes g the worse of g and o, field by field: a sharded run's
// second is disturbed when one of its shards was.
func (g *GenSecond) Merge(o GenSecond) {
	if !o.Sampled {
		return
	}
	g.Sampled = true
	g.Wait = max(g.Wait, o.Wait)
	g.Delay = max(g.Delay, o.Delay)
	g.Busy = max(g.Busy, o.Busy)
	if o.HasPressure {
		g.HasPressure = true
		g.Pressure = max(g.Pressure, o.Pressure)
	}
}

// GroupSecond is one plan group's share of a Second. Like Second it holds
// summaries only, so a run's memory grows by a few words per group and
// second, whatever the rate.
type GroupSecond struct {
	// Group is the plan group's name, so that a timeline read back from a
	// saved report needs nothing else to name its rows.
	Group string
	// Connected and Lost are the group's clients connected, and dropped
	// and not yet back, at the end of the second.
	Connected, Lost int
	// Sent counts the group's PUBLISHes written; Received the deliveries
	// to its clients (duplicates included, as Metrics.Received); Errors
	// and Disconnects its clients' errors and connection losses.
	Sent, Received, Errors, Disconnects int64
	// Acked counts the acknowledgements (PUBACK, PUBCOMP) of the group's
	// QoS 1/2 publishes that arrived in the second, refusals excluded (as
	// Metrics.Acked); Duplicates the deliveries to the group's clients
	// that repeated one they already had (as Metrics.Duplicates, and
	// included in Received). Summed over a timeline they are the run's
	// totals; Second has no whole-run field for them.
	Acked, Duplicates int64
	// P50, P99 and Max are the end-to-end latency of the deliveries to the
	// group's clients in that second. All three are zero when there was no
	// latency sample: a sample is recorded as 1µs at least, so Max == 0
	// means "none", never "instant".
	P50, P99, Max time.Duration
	// LagMax is the largest lag behind schedule of the group's sends in
	// that second (zero when it sent nothing).
	LagMax time.Duration
}

// Broker holds the embedded broker's own counters, so that broker drops
// are never mistaken for mqplan's losses. Nil for an external broker.
type Broker struct {
	MessagesReceived int64 // PUBLISH packets the broker received
	MessagesSent     int64 // PUBLISH packets the broker sent
	MessagesDropped  int64 // dropped because a client's outbound queue was full
	InflightDropped  int64 // dropped because a client's inflight store was full
	ClientsMaximum   int64
}

// Stats is everything one run measured.
type Stats struct {
	// Started is the wall-clock start, for reports.
	Started time.Time
	// Elapsed is the whole run's length.
	Elapsed time.Duration
	// Broker is the URL used (the embedded broker's real address included).
	BrokerURL string
	// Phases holds every phase, indexed by phase.Phase.
	Phases []PhaseStats
	// Stages has one entry per stage of a staged plan (stages:), in plan
	// order; nil without stages.
	Stages []StageStats
	// Groups describes each plan group's clients, in plan order.
	Groups []GroupInfo
	// Timeline is the per-second history.
	Timeline []Second
	// Broker holds the embedded broker's counters (nil when external).
	Broker *Broker
	// BrokerApart says the embedded broker ran in a process of its own,
	// apart from the clients (mqplan run --workers: in the coordinating
	// parent), so that the run's CPU figures are the clients' alone.
	BrokerApart bool
	// Clock is a sharded run's time base (clock.go), nil in a single
	// process. A shard's own run fills only its Pairs into this shard;
	// the merge of the parts fills the rest.
	Clock *Clock
	// CountersStart and CountersEnd are the broker's own counters ($SYS,
	// Prometheus) as they stood before the first publish and after the
	// drain (the broker's next update after it), so that their
	// differences cover the measured traffic: not Sampled() when not
	// sampled.
	CountersStart, CountersEnd brokerstat.Counters
	// CountersUnchanged are the cumulative counters that are in neither
	// reading but are known not to have changed over the run: a broker that
	// publishes a $SYS counter only when it changed (Mosquitto) did not
	// publish it between the monitor's subscribing and its first live
	// update after the drain. Their change is 0.
	CountersUnchanged []brokerstat.Counter
	// Interrupted is set when a signal or context cancelled the run.
	Interrupted bool
	// Incomplete, when non-empty, says why the run could not complete
	// (exit code 3), for example "group sub: no client could connect".
	Incomplete string
	// BrokerGone, when non-empty, says that the broker process the plan's
	// broker.metrics watches exited during the run, and when: a run whose
	// broker died measured a crash, not a load (mqplan find-max stops
	// its search there). The report's warnings say it too.
	BrokerGone string
	// ErrorSamples holds the first distinct error messages, for the report,
	// each with how often errors of its kind occurred ("(and 29 more like
	// it)"); Errors counts them all (the errors metric, over the whole run).
	ErrorSamples []string
	// InFlightAtEnd counts the QoS 1/2 publishes still awaiting their
	// acknowledgement when drain ended: non-zero means drain was too short
	// for what the broker had in hand (or the broker stalled).
	InFlightAtEnd int64
	// DrainQuiet is how long drain kept listening after the last expected
	// delivery, to catch duplicates that follow it.
	DrainQuiet time.Duration
	// DrainEndRate is the deliveries per second that arrived in drain's
	// last second (over drain's whole length when it was shorter): non-zero
	// means deliveries were still arriving when drain ended, and the
	// missing ones on the streams still delivering were late, not dropped
	// (Metrics.LostLate). A sharded run sums its shards'.
	DrainEndRate int64
	// Drain is how long drain lasted (the longest of a sharded run's):
	// with DrainEndRate and LostLate, the report says what drain would
	// likely have received them.
	Drain time.Duration
	// Cross is what the broker's counters are checked against beyond the
	// phase counts (runner.CrossCheck); nil in results of an mqplan
	// without it, which are not checked.
	Cross *Cross
	// Notices say where the broker did otherwise than the plan asked (QoS
	// downgrades, no shared subscriptions, a copy per overlapping
	// subscription), for the report's warnings.
	Notices []string
	// Procs is how many CPUs mqplan's Go runtime could use during the run
	// (GOMAXPROCS; 0 when unknown), so that a report can tell whether
	// mqplan's own CPU (Second.Self) was at its ceiling, in which case
	// mqplan rather than the broker may have been the limit.
	Procs int
}

// Phase returns phase p's figures, or nil when the run recorded no
// phases (it could not start).
func (s *Stats) Phase(p phase.Phase) *PhaseStats {
	if int(p) < len(s.Phases) {
		return &s.Phases[p]
	}
	return nil
}
