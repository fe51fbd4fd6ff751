package plans

import (
	"fmt"
	"strconv"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/threshold"
)

// FixedBound is a threshold of the plan that compares a figure growing
// with the load (a rate, a count of messages or connections) with a fixed
// number, as groups.sub.recv_rate >= 190 in plans/1to1-qos1.yaml. Under
// mqplan find-max, which varies the load, such a bound fails every value
// below it, or passes every value above it, whatever the broker does: the
// knee it finds is the bound's, not the broker's. find-max warns of each
// before the search starts.
type FixedBound struct {
	// Index is the threshold's place in the plan's thresholds list, from
	// 0, as --set 'thresholds[N]=...' names it.
	Index int
	// Expr is the threshold as written; Pos where.
	Expr string
	Pos  Pos
	// Bound is the comparison that does not scale.
	Bound threshold.Bound
	// Relative is the comparison restated against the knob group's
	// measured send rate, at the ratio the plan's own value gives (190
	// against 200 msg/s: 0.95), or "" when there is no such restatement
	// (a count, or a client-count knob).
	Relative string
}

// scalesWithLoad are the metrics that grow with a group's rate or client
// count: a fixed bound on any of them holds at one load and not another.
// Rates of failure (loss_rate), latencies, and counts of what should not
// happen (lost, errors, disconnects), compared with 0, carry over; so do
// the processes' CPU and memory, bounded by the machine.
var scalesWithLoad = map[metric.Name]bool{
	metric.SendRate: true, metric.RecvRate: true,
	metric.Sent: true, metric.Acked: true, metric.Expected: true, metric.Received: true,
	metric.SentBytes: true, metric.ReceivedBytes: true,
	metric.Requests: true, metric.ResponsesExpected: true, metric.Responses: true, metric.ResponsesSent: true,
	metric.ConnectAttempts: true, metric.ConnectOK: true,
	metric.BrokerPublishReceived: true, metric.BrokerPublishSent: true,
	metric.BrokerClientsMax: true, metric.BrokerSubscriptionsMax: true,
}

// FixedBounds lists the plan's thresholds (builtins aside) that bound a
// figure scaling with the load by a number other than 0 or 1 (sent > 0
// and connect.ok >= 1 say "something happened" at any load), in plan
// order, with the restatement to suggest when there is one.
func (k Knob) FixedBounds(p *Plan, ths []*Threshold) []FixedBound {
	var out []FixedBound
	i := -1
	for _, th := range ths {
		if th == nil || th.Builtin {
			continue
		}
		i++
		if th.Threshold == nil {
			continue
		}
		for _, b := range th.Bounds() {
			if !scalesWithLoad[b.Ref.Metric] || b.Value == 0 || b.Value == 1 {
				continue
			}
			out = append(out, FixedBound{Index: i, Expr: th.Source.Expr, Pos: th.Source.Pos, Bound: b, Relative: k.relative(p, b)})
		}
	}
	return out
}

// relative restates a bound on a rate against the knob group's send rate.
func (k Knob) relative(p *Plan, b threshold.Bound) string {
	if k.Count || (b.Ref.Metric != metric.SendRate && b.Ref.Metric != metric.RecvRate) {
		return ""
	}
	v := k.Value(p)
	if !(v > 0) || !(b.Value > 0) {
		return ""
	}
	send := threshold.Ref{Scope: threshold.Groups, Name: k.Group, Metric: metric.SendRate}
	ratio := strconv.FormatFloat(b.Value/v, 'g', 4, 64)
	return fmt.Sprintf("%s %s %s * %s", b.Ref, b.Op, send, ratio)
}
