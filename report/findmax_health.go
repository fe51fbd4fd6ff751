package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
)

// stallSeconds is how long a broker may answer nothing (no delivery, no
// acknowledgement) while publishes await their acknowledgement before
// the run counts as stalled. A saturated broker answers late but keeps
// answering every second; one that stops for this long is stopped (a
// signal, a hang, a network that went away), not slow.
const stallSeconds = 3

// TrialHealth says why a completed run cannot be read as a capacity
// signal, or nothing when it can. mqplan find-max reads a trial whose
// thresholds failed as "the knee is below this value"; that is true of a
// healthy broker under too much load, and false of one that crashed,
// stalled or refused connections: its thresholds fail at any load, and
// a search that read them as a capacity signal would bisect downwards
// into a dead broker. The signs of an unhealthy run:
//
//   - the broker process that broker.metrics watches exited;
//   - connections failed (connect.failed > 0) or dropped unexpectedly
//     (disconnects, clients.lost > 0): mqplan's clients never disconnect
//     on their own, and a broker that sheds them at some load has not
//     measured that load;
//   - the broker answered nothing for stallSeconds or more while
//     publishes awaited their acknowledgement, or (QoS 0, which has no
//     acknowledgement) while messages it was expected to deliver had been
//     sent since its last delivery (from the timeline).
//
// An incomplete or interrupted run is not judged here: it is not a
// result at all (Result.Complete).
func TrialHealth(r *Result) []string {
	var why []string
	if r.BrokerGone != "" {
		why = append(why, r.BrokerGone)
	}
	m := r.Measured.Top
	if n := countOf(m, metric.ConnectFailed); n > 0 {
		why = append(why, fmt.Sprintf("%d %s failed (connect.failed)", n, pluralWord(int(min(n, 2)), "connection", "connections")))
	}
	if n := countOf(m, metric.Disconnects); n > 0 {
		why = append(why, fmt.Sprintf("%d unexpected %s (disconnects)", n, pluralWord(int(min(n, 2)), "disconnection", "disconnections")))
	} else if n := countOf(m, metric.ClientsLost); n > 0 {
		why = append(why, fmt.Sprintf("%d %s lost (clients.lost)", n, pluralWord(int(min(n, 2)), "client", "clients")))
	}
	if s := r.stall(); s != "" {
		why = append(why, s)
	}
	return why
}

// countOf reads a count from a metric set (0 when absent).
func countOf(m map[metric.Name]any, n metric.Name) int64 {
	switch v := m[n].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	}
	return 0
}

// stall finds the first stretch of stallSeconds or more of the publishing
// phases in which nothing was delivered and nothing acknowledged while
// QoS 1/2 publishes were outstanding or QoS 0 messages that some
// subscriber expects were sent since the last delivery.
func (r *Result) stall() string {
	if r.Plan == nil {
		return ""
	}
	// acked: a QoS 1/2 group, whose publishes await an acknowledgement.
	// delivered0: a QoS 0 group whose messages the run expected to be
	// delivered (its measured expected > 0): with no acknowledgement, what
	// it sent since the last delivery is what awaits the broker.
	acked := make([]bool, len(r.Plan.Groups))
	delivered0 := make([]bool, len(r.Plan.Groups))
	for i, g := range r.Plan.Groups {
		if g.Publish == nil {
			continue
		}
		acked[i] = g.Publish.QoS > 0
		delivered0[i] = g.Publish.QoS == 0 && countOf(r.Measured.Groups[g.Name], metric.Expected) > 0
	}
	var outstanding, pending0 int64
	var from time.Duration
	run := 0
	prev := time.Duration(0)
	for _, s := range r.Timeline {
		start := prev
		prev = s.At
		var sent, sent0, ack, recv int64
		for i, g := range s.Groups {
			if i < len(acked) && acked[i] {
				sent += g.Sent
			}
			if i < len(delivered0) && delivered0[i] {
				sent0 += g.Sent
			}
			ack += g.Acked
			recv += g.Received
		}
		outstanding += sent - ack
		if recv > 0 {
			pending0 = 0
		} else {
			pending0 += sent0
		}
		silent := s.Phase.Publishing() && (outstanding > 0 || pending0 > 0) && ack == 0 && recv == 0
		if !silent {
			run = 0
			continue
		}
		if run == 0 {
			from = start
		}
		if run++; run >= stallSeconds {
			if outstanding > 0 {
				return fmt.Sprintf("the broker answered nothing (no delivery, no acknowledgement) for %d s or more from %s while %d publishes awaited their acknowledgement: it stalled", run, fmtDuration(from.Round(time.Second)), outstanding)
			}
			return fmt.Sprintf("the broker answered nothing (no delivery) for %d s or more from %s while %d QoS 0 publishes awaited their delivery: it stalled", run, fmtDuration(from.Round(time.Second)), pending0)
		}
	}
	return ""
}

func FixedBoundWarning(f plans.FixedBound, knob string) string {
	s := fmt.Sprintf("%s: thresholds[%d] %q compares %s, which grows with %s, with the fixed number %s: it passes or fails by the value tried, whatever the broker does, so the knee found may be the threshold's, not the broker's",
		f.Pos, f.Index, f.Expr, f.Bound.Ref, knob, strconv.FormatFloat(f.Bound.Value, 'g', -1, 64))
	if f.Relative != "" {
		expr := strings.Replace(f.Expr, f.Bound.Text, f.Relative, 1)
		return s + fmt.Sprintf("; restate it relative to the load: --set 'thresholds[%d]=%s'", f.Index, expr)
	}
	return s + fmt.Sprintf("; restate it against another measured figure (as received >= expected * 0.99) with --set 'thresholds[%d]=EXPR': loss_rate, dup_rate and latencies carry over to any load", f.Index)
}
