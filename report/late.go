package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// lateOf is the deliveries counted lost_late in the scope a threshold
// value reads (0 for a baseline's or a scope without the metric).
func lateOf(m threshold.Measured, ref threshold.Ref) int {
	if ref.Baseline {
		return 0
	}
	var set metric.Set
	switch ref.Scope {
	case threshold.Top:
		set = m.Top
	case threshold.Groups:
		set = m.Groups[ref.Name]
	case threshold.Phases:
		set = m.Phases[ref.Name]
	case threshold.Stages:
		set = m.Stages[ref.Name]
	}
	n, _ := set[metric.LostLate].(int)
	return n
}

// lateReason is the reason a failed threshold gives when the loss it
// judges was, in part or whole, late rather than dropped: the value of
// lost_late in the scope of the first loss metric it reads that has some
// (lost, loss_rate, lost_late); "" when none has.
func lateReason(m threshold.Measured, vs []threshold.Value) (string, int) {
	for _, v := range vs {
		switch v.Ref.Metric {
		case metric.Lost, metric.LossRate, metric.LostLate:
		default:
			continue
		}
		if n := lateOf(m, v.Ref); n > 0 {
			ref := v.Ref
			ref.Metric = metric.LostLate
			return fmt.Sprintf("%s=%d of the loss: deliveries still arriving when drain ended, late rather than dropped by the broker", ref.String(), n), n
		}
	}
	return "", 0
}

// lateWarning says that deliveries were still arriving when drain ended,
// how fast, how many were counted lost for it, and the drain that would
// likely have received them; "" when nothing was late.
//
// The suggestion: the late deliveries arrive at least at the rate of
// drain's last second, so drain + late / rate would have taken them; and
// a message sent at the end of publishing arrives about as late as the
// slowest delivery received (the latency maximum), so drain must be at
// least that. Twice the larger of the two, rounded up to a whole second,
// leaves room for a rate that falls off; the mapping form's max is 4×
// that estimate rounded up to ten seconds, at least 30s, since quiet ends
// it as soon as the deliveries stop. Without a rate, the latency alone.
func lateWarning(st *stats.Stats) string {
	var late int64
	var maxLatency time.Duration
	for i := range st.Phases {
		t := &st.Phases[i].Total
		late += max(0, min(t.LostLate, t.Lost-t.LostUnsent-t.LostUnacked)) // as the metric (environment.go)
		if t.Latency != nil && t.Latency.TotalCount() > 0 {
			maxLatency = max(maxLatency, time.Duration(t.Latency.Max())*time.Microsecond)
		}
	}
	if late <= 0 {
		return ""
	}
	// Without a rate (drain: 0s, which has no last second to measure, or
	// a part of the run written by an mqplan that did not measure it) the
	// suggestion rests on the latency alone.
	rate := ""
	if st.DrainEndRate > 0 {
		rate = fmt.Sprintf(" (%d/s in its last second)", st.DrainEndRate)
	}
	plain, most := suggestDrain(st.Drain, late, st.DrainEndRate, maxLatency)
	return fmt.Sprintf("deliveries were still arriving when drain ended%s: %d late %s counted lost (lost_late); drain: %s (or drain: {max: %s, quiet: 1s}) would likely have received them",
		rate, late, pluralWord(int(min(late, math.MaxInt32)), "delivery", "deliveries"), fmtWhole(plain), fmtWhole(most))
}

// suggestDrain is lateWarning's arithmetic: the plain drain and the
// mapping form's max it suggests.
func suggestDrain(drain time.Duration, late, rate int64, maxLatency time.Duration) (plain, most time.Duration) {
	need := max(drain, maxLatency)
	if rate > 0 {
		need = max(need, drain+time.Duration(float64(late)/float64(rate)*float64(time.Second)))
	}
	need = max(need, time.Second) // at least a second: the window drain's end is judged by
	plain = roundUp(2*need, time.Second)
	most = max(30*time.Second, roundUp(4*need, 10*time.Second))
	return plain, most
}

// roundUp rounds d up to a whole multiple of unit.
func roundUp(d, unit time.Duration) time.Duration {
	return (d + unit - 1) / unit * unit
}

// fmtWhole writes a whole number of seconds as a plan would (6s, 1m30s,
// 2h).
func fmtWhole(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
