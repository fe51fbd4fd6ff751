package runner

import (
	"fmt"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// crossCounts is this process's share of what the broker's counters are
// checked against beyond the phase counts (stats.Cross).
func (r *run) crossCounts() *stats.Cross {
	c := &stats.Cross{Resent: r.resent.Load(), ResentCounted: r.resentCounted.Load(), Fences: r.fences.Load(),
		FencesBack: r.fencesBack.Load(), EndStale: r.counters.endStale}
	if r.counters.start != nil && r.counters.end != nil {
		c.Monitor = r.counters.end.sentMsgs - r.counters.start.sentMsgs
	}
	if v := r.counters.end; v != nil && v.mosquitto {
		c.Mosquitto = true
	}
	if v := r.counters.start; v != nil && !v.live {
		c.StartRetained = true
	}
	if v := r.counters.mon.load(); v != nil {
		c.MonitorMsgs, c.MonitorBatch = v.msgs, v.msgs-v.batchMsgs
	}
	return c
}

// crossCheck notes what CrossCheck finds in a single process's run.
func (r *run) crossCheck(st *stats.Stats) {
	for _, n := range CrossCheck(r.prog, st) {
		r.note(n)
	}
}

// CrossCheck compares the broker's publish counters with what mqplan
// wrote and was delivered in the same window, and returns where they
// differ, with both numbers and the likely reasons, as notices: the
// broker's own counters' start and end (broker.metrics), and the embedded
// broker's counters (whole life). st is a whole run's: a single
// process's, or a sharded run's once merged (its Cross summed over the
// shards), since one shard's counts are only a part of what the broker
// saw. A result without st.Cross (an older mqplan's) is not checked.
func CrossCheck(prog *plans.Program, st *stats.Stats) []string {
	x := st.Cross
	if x == nil {
		return nil
	}
	var notes []string
	note := func(s string) { notes = append(notes, s) }
	var written, delivered, deliveredAll int64
	for p := range st.Phases {
		t := &st.Phases[p].Total
		all := t.Received + t.ChurnAmbiguousReceived + t.OverlapCopies + t.Foreign + t.Unexpected + t.Corrupted
		deliveredAll += all
		if phase.Phase(p) >= phase.Warmup {
			delivered += all
		}
		written += t.Sent
	}
	written += x.Resent + x.Fences
	delivered += x.FencesBack
	deliveredAll += x.FencesBack
	answersSent, answersDelivered, answersAll := answerCounts(st)
	written += answersSent
	delivered += answersDelivered
	deliveredAll += answersAll
	if !x.EndStale {
		received, receivedIs := written, "the PUBLISH packets mqplan wrote (resends included)"
		if x.Mosquitto {
			// Mosquitto counts a PUBLISH received when its fixed header
			// masked with 0xF5 is 0x30: QoS 2 (bit 0x04) and retained
			// (bit 0x01) PUBLISHes are left out of
			// publish/messages/received.
			received, receivedIs = mosquittoCounted(prog, st), "the PUBLISH packets mqplan wrote at QoS 0 or 1 without the retain flag (resends included; Mosquitto counts no QoS 2 or retained PUBLISH)"
		}
		window := ""
		if x.StartRetained {
			// The start figures are the retained copies of the broker's
			// last update before the monitor subscribed: what it did
			// between that update and the subscription is in the change.
			window = " (the start is the broker's last update before the monitor subscribed, so what it did since that update counts too: set sys_interval 1 for a start taken while the monitor listens)"
		}
		checkPair(note, "broker.metrics", "PUBLISH received", st.CountersStart, st.CountersEnd, brokerstat.PublishReceived, received, 0,
			receivedIs, "other clients published on the broker during the run"+window)
		checkPair(note, "broker.metrics", "PUBLISH sent", st.CountersStart, st.CountersEnd, brokerstat.PublishSent, delivered, x.Monitor,
			"the deliveries mqplan's clients received (duplicates included)", "other clients subscribed on the broker, or it counts its $SYS messages differently"+window)
		if ds, ok := st.CountersStart.Get(brokerstat.Dropped); ok {
			if de, ok := st.CountersEnd.Get(brokerstat.Dropped); ok && de < ds {
				note(fmt.Sprintf("broker.metrics: the broker's dropped counter went down during the run (from %d to %d): the broker restarted or reset it, so its change over the run is unknown", ds, de))
			}
		}
	}
	if b := st.Broker; b != nil {
		if b.MessagesReceived != written {
			note(fmt.Sprintf("the embedded broker counted %d PUBLISH received, but mqplan wrote %d (resends included)", b.MessagesReceived, written))
		}
		// The monitor may close before reading the broker's last $SYS
		// update: at most that many of the broker's sends are unseen.
		if d := b.MessagesSent - (deliveredAll + x.MonitorMsgs); d < 0 || d > x.MonitorBatch {
			note(fmt.Sprintf("the embedded broker counted %d PUBLISH sent, but mqplan's clients received %d deliveries (duplicates included) and the $SYS monitor %d messages", b.MessagesSent, deliveredAll, x.MonitorMsgs) + churnResends(prog))
		}
	}
	return notes
}

// mosquittoCounted is what Mosquitto's publish/messages/received counts of
// mqplan's PUBLISH packets: those of groups publishing at QoS 0 or 1
// without the retain flag, resends included.
func mosquittoCounted(prog *plans.Program, st *stats.Stats) int64 {
	var n int64
	for g := range prog.Plan.Groups {
		pub := prog.Plan.Groups[g].Publish
		if pub == nil || pub.QoS == 2 || pub.Retain {
			continue
		}
		for p := range st.Phases {
			if g < len(st.Phases[p].Groups) {
				n += st.Phases[p].Groups[g].Sent
			}
		}
	}
	answers, _, _ := answerCounts(st)
	return n + st.Cross.ResentCounted + st.Cross.Fences + answers
}

// checkPair notes when a cumulative counter's delta differs from mqplan's
// figure by other than the monitor's own share.
func checkPair(note func(string), source, what string, start, end brokerstat.Counters, c brokerstat.Counter, ours, monitor int64, oursIs, reasons string) {
	s, ok1 := start.Get(c)
	e, ok2 := end.Get(c)
	if !ok1 || !ok2 {
		return
	}
	if e < s {
		note(fmt.Sprintf("%s: the broker's %s counter went down during the run (from %d to %d): the broker restarted or reset it, so its change over the run is unknown", source, what, s, e))
		return
	}
	delta := e - s
	if delta == ours+monitor {
		return
	}
	extra := ""
	if monitor > 0 {
		extra = fmt.Sprintf(" plus %d to mqplan's $SYS monitor", monitor)
	}
	note(fmt.Sprintf("%s: the broker counted %d %s during the run, but %s were %d%s (%+d): %s", source, delta, what, oursIs, ours, extra, delta-ours-monitor, reasons))
}
