package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// This file is the overdrive warning: an open-loop run whose schedule was
// not held. Latency is measured from the intended send time, so a broker
// (or an mqplan) that cannot keep up shows latencies that grow with the
// backlog: correct, but easy to misread as the broker's latency at the
// planned rate. The warning says what happened instead, and at what rate.

// The rule, over the steady phase and the open-loop publishing groups
// (closed-loop groups have no schedule to hold), all four together:
//   - something was planned: the schedule called for messages (sent +
//     unsent; unsent counts the messages due before publishing stopped
//     and never sent, so sent + unsent is what the schedule called for);
//   - the achieved rate fell short: unsent is at least overdriveShort of
//     that (sent below 90% of the schedule);
//   - the backlog was real: the lag (actual - intended send time) reached
//     overdriveLag;
//   - and it grew: the last steady second's largest lag is above the
//     first's (when the timeline has two steady seconds or more).
//
// A healthy run sends everything with lag in milliseconds; a run whose
// connections dropped leaves messages unsent but does not build a lag
// (a publisher catches up, or skips what fell due while it was away), and
// one brief stall makes lag that then shrinks: none of them is flagged.
const (
	overdriveShort = 0.10
	overdriveLag   = 100 * time.Millisecond
	// selfLimitShare is how close to all its CPUs mqplan's busiest second
	// must come for mqplan, not the broker, to look like the limit.
	selfLimitShare = 0.9
	// selfBusyShare is how close it must come for either side to be the
	// possible limit.
	selfBusyShare = 0.75
)

// overdriveWarning returns the overdrive warning for a run, "" when its
// schedule was held (or there was none).
func overdriveWarning(p *plans.Plan, st *stats.Stats) string {
	steady := st.Phase(phase.Steady)
	if p == nil || steady == nil || st.Interrupted {
		return ""
	}
	// The schedule's steady phase: the plan's duration (the measured
	// phase runs a little longer, by the grace a late publisher gets).
	length := p.Duration
	if length <= 0 {
		length = steady.End - steady.Start // sized by counts
	}
	if length <= 0 {
		return ""
	}
	var sent, unsent int64
	var lagMax time.Duration
	open := make([]bool, len(p.Groups))
	for gi, g := range p.Groups {
		if g.Publish == nil || g.Publish.ClosedLoop() || gi >= len(steady.Groups) {
			continue
		}
		open[gi] = true
		m := &steady.Groups[gi]
		sent += m.Sent
		unsent += m.Unsent
		if m.Lag != nil {
			lagMax = max(lagMax, micros(m.Lag.Max()))
		}
	}
	planned := sent + unsent
	if planned == 0 || float64(unsent) < overdriveShort*float64(planned) || lagMax < overdriveLag {
		return ""
	}
	first, last, seconds := lagTrend(st, open)
	if seconds >= 2 && last <= first {
		return ""
	}
	secs := length.Seconds()
	achieved := float64(sent) / secs
	msg := fmt.Sprintf("the schedule was not held: the broker (or mqplan) is saturated at %s msg/s: the plan asked for %s msg/s in steady, %s of those messages were never sent (%s), and the lag behind the schedule grew to %s, so latencies measured from the intended times include that backlog",
		fmtRate(achieved), fmtRate(float64(planned)/secs), fmtPercent(float64(unsent)/float64(planned)), thousandsI64(unsent), fmtDuration(lagMax))
	return msg + "; " + limitOf(st)
}

// lagTrend is the largest lag of the open-loop groups' sends in the first
// and the last second of steady, and how many steady seconds there were.
func lagTrend(st *stats.Stats, open []bool) (first, last time.Duration, seconds int) {
	for i := range st.Timeline {
		s := &st.Timeline[i]
		if s.Phase != phase.Steady {
			continue
		}
		var lag time.Duration
		for gi := range s.Groups {
			if gi < len(open) && open[gi] {
				lag = max(lag, s.Groups[gi].LagMax)
			}
		}
		if seconds == 0 {
			first = lag
		}
		last = lag
		seconds++
	}
	return first, last, seconds
}

// limitOf says whether mqplan itself looks like the limit: its busiest
// steady second used nearly all the CPUs it could use (selfLimitShare),
// or a good part of them (selfBusyShare: then either may be), adding the
// broker process's busiest second when broker.metrics sampled it.
func limitOf(st *stats.Stats) string {
	cpu, sampled := 0.0, false
	bcpu, bsampled := 0.0, false
	for i := range st.Timeline {
		s := &st.Timeline[i]
		if s.Phase != phase.Steady {
			continue
		}
		if s.Self.Sampled {
			cpu, sampled = max(cpu, s.Self.CPU), true
		}
		if s.Broker.Sampled {
			bcpu, bsampled = max(bcpu, s.Broker.CPU), true
		}
	}
	broker := ""
	if bsampled {
		broker = fmt.Sprintf("; the broker's process used at most %s%% CPU in a steady second (100%% is one core)", fmtFloat(bcpu))
	}
	cpus := fmt.Sprintf("%d %s", st.Procs, plural(st.Procs, "CPU"))
	if st.Broker != nil && st.BrokerApart && !bsampled {
		broker = "; the embedded broker ran in the --workers parent, apart from the workers, whose CPU alone is this"
	}
	if st.Broker != nil && !st.BrokerApart {
		// The embedded broker shares mqplan's process: its CPU is both's.
		if !sampled || st.Procs <= 0 {
			return "the embedded broker runs in mqplan's own process, whose CPU was not sampled"
		}
		return fmt.Sprintf("the embedded broker runs in mqplan's own process, which used at most %s%% CPU of the %s it could use (--procs): broker and generator share them, so run a broker of its own to tell which is the limit", fmtFloat(cpu), cpus)
	}
	switch share := cpu / 100 / float64(st.Procs); {
	case !sampled || st.Procs <= 0:
		return "mqplan's own CPU was not sampled, so which of the two was the limit is not known" + broker
	case share >= selfLimitShare:
		return fmt.Sprintf("mqplan itself looks like the limit: it used %s%% CPU at its busiest steady second, %s of the %s it could use (--procs): give it more CPUs or spread the load over several mqplan processes", fmtFloat(cpu), fmtPercent(share), cpus) + broker
	case share >= selfBusyShare:
		return fmt.Sprintf("mqplan was near its ceiling too (%s%% CPU at its busiest steady second, %s of the %s it could use, --procs), so either may be the limit: give mqplan more CPUs to tell", fmtFloat(cpu), fmtPercent(share), cpus) + broker
	case bsampled && bcpu < 100*selfBusyShare:
		// Neither process was busy: what held them back is elsewhere.
		return fmt.Sprintf("neither process was near its CPU ceiling (mqplan at most %s%% of the %s it could use, --procs, the broker's process at most %s%%, 100%% being one core): the machine's CPUs (shared with other processes?), the network or the broker's own limits (queues, in-flight windows) look like the limit", fmtFloat(cpu), cpus, fmtFloat(bcpu))
	default:
		return fmt.Sprintf("the broker looks like the limit: mqplan used at most %s%% CPU of the %s it could use (--procs)", fmtFloat(cpu), cpus) + broker
	}
}

// closedLoopNotes says, for each closed-loop group (publish.rate: max),
// the rate it achieved and which clock its latency uses.
func closedLoopNotes(p *plans.Plan, st *stats.Stats) []string {
	if p == nil {
		return nil
	}
	steady := st.Phase(phase.Steady)
	var out []string
	for gi, g := range p.Groups {
		if !g.Publish.ClosedLoop() {
			continue
		}
		window := "each write after the previous one (QoS 0)"
		if g.Publish.Inflight > 0 {
			window = fmt.Sprintf("inflight %d", g.Publish.Inflight)
		}
		achieved := "no steady phase was measured"
		if steady != nil && gi < len(steady.Groups) && steady.End > steady.Start {
			achieved = fmt.Sprintf("it achieved %s msg/s in steady", fmtRate(float64(steady.Groups[gi].Sent)/(steady.End-steady.Start).Seconds()))
		}
		out = append(out, fmt.Sprintf("group %s ran a closed loop (rate: max, %s): %s; the latency of its messages is service latency, from each message's actual send time, not from a schedule", g.Name, window, achieved))
	}
	return out
}

// thousandsI64 writes n with thin separators every three digits.
func thousandsI64(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
