package report

import (
	"fmt"
	"github.com/mqplan/mqplan/brokerstat"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/stats"
)

// The summary's tables as cells, shared by the terminal table, the HTML
// page and the Markdown summary, so that a figure reads the same in each
// and a new column is added once. Each format only lays them out (and
// escapes them where it must).

// groupsHead heads the groups table.
var groupsHead = []string{"group", "role", "clients", "connected", "clients lost", "disconnects", "sent", "unsent", "received",
	"send/s total", "send/s per client", "recv/s total", "recv/s per client"}

// groupsCells is one row per group and a total. The total's per-client
// rates would mix publishers and subscribers into one meaningless
// average, so they are left out.
func groupsCells(r *Result) [][]string {
	var rows [][]string
	clients, connected, lost := 0, 0, 0
	for _, g := range r.Groups {
		m := r.Measured.Groups[g.Name]
		clients += g.Clients
		connected += g.Connected
		lost += g.Lost
		rows = append(rows, []string{
			g.Name, g.role(), itoa(g.Clients), itoa(g.Connected), itoa(g.Lost), count(m, metric.Disconnects),
			count(m, metric.Sent), count(m, metric.Unsent), count(m, metric.Received),
			rate(m, metric.SendRate, 1), rate(m, metric.SendRate, g.Clients),
			rate(m, metric.RecvRate, 1), rate(m, metric.RecvRate, g.Clients),
		})
	}
	top := r.Measured.Top
	return append(rows, []string{
		"total", "", itoa(clients), itoa(connected), itoa(lost), count(top, metric.Disconnects),
		count(top, metric.Sent), count(top, metric.Unsent), count(top, metric.Received),
		rate(top, metric.SendRate, 1), absent, rate(top, metric.RecvRate, 1), absent,
	})
}

// latencyHead heads the latency table.
var latencyHead = []string{"", "samples", "min", "p50", "p90", "p99", "p99.9", "max"}

// latencyCells is one row per latency (e2e, ack, connect, subscribe);
// a latency without samples shows "-", never 0.
func latencyCells(r *Result) [][]string {
	var rows [][]string
	for _, l := range r.Latency {
		row := []string{l.Name, fmt.Sprint(l.Samples)}
		for _, d := range []time.Duration{l.Min, l.P50, l.P90, l.P99, l.P999, l.Max} {
			if l.Samples == 0 {
				row = append(row, absent)
			} else {
				row = append(row, fmtDuration(d))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// deliveryHead heads the delivery table.
var deliveryHead = []string{"group", "expected", "received", "lost", "unsent", "unacked", "by broker", "late", "dup", "out-of-order", "corrupted", "loss rate", "dup rate"}

// deliveryCells is one row per group and, last, the total.
func deliveryCells(r *Result) [][]string {
	row := func(name string, m metric.Set) []string {
		return []string{name,
			count(m, metric.Expected), count(m, metric.Received), count(m, metric.Lost),
			count(m, metric.LostUnsent), count(m, metric.LostUnacked), count(m, metric.LostBroker), count(m, metric.LostLate),
			count(m, metric.Duplicates), count(m, metric.OutOfOrder), count(m, metric.Corrupted),
			percent(m, metric.LossRate), percent(m, metric.DupRate),
		}
	}
	var rows [][]string
	for _, g := range r.Groups {
		rows = append(rows, row(g.Name, r.Measured.Groups[g.Name]))
	}
	return append(rows, row("total", r.Measured.Top))
}

// healthHead heads the generator-health table.
var healthHead = []string{"group", "lag p99", "lag max", "late sends", "late %"}

// healthCells is one row per publishing group and, last, the total.
func healthCells(r *Result) [][]string {
	row := func(name string, m metric.Set, late int64) []string {
		return []string{name, duration(m, metric.LagP99), duration(m, metric.LagMax), fmt.Sprint(late), percent(m, metric.LateRate)}
	}
	var rows [][]string
	for _, g := range r.Groups {
		if g.Publishes {
			rows = append(rows, row(g.Name, r.Measured.Groups[g.Name], g.Late))
		}
	}
	return append(rows, row("total", r.Measured.Top, r.Late))
}

// processesHead heads the processes table.
var processesHead = []string{"process", "seconds", "cpu mean", "cpu max", "rss max"}

// processesTitle titles the processes section in every format.
const processesTitle = "Processes (from /proc, once a second; CPU in % of one core)"

// processes are the processes whose CPU and memory a timeline may hold:
// the broker's (broker.metrics) and mqplan's own, by the name every
// format shows.
var processes = []struct {
	name string
	get  func(*stats.Second) stats.ProcSample
}{
	{"broker", func(s *stats.Second) stats.ProcSample { return s.Broker }},
	{"mqplan", func(s *stats.Second) stats.ProcSample { return s.Self }},
}

// processesCells is one row per process sampled at least once over the
// run; none when neither was (the section is then left out).
func processesCells(r *Result) [][]string {
	var rows [][]string
	for _, p := range processes {
		u := usageOf(r.Timeline, p.get)
		if u.Seconds == 0 {
			continue
		}
		rows = append(rows, []string{p.name, fmt.Sprint(u.Seconds),
			fmt.Sprintf("%.1f%%", u.CPUMean), fmt.Sprintf("%.1f%%", u.CPUMax), fmtMiB(u.RSSMax)})
	}
	return rows
}

// baselineHead heads a section of the comparison with the baseline in
// the HTML page and the Markdown summary (the terminal shows mqplan
// compare's own table, with A and B).
var baselineHead = []string{"metric", "baseline", "this run", "change", "change %", ""}

// compareCells is one row per compared metric of a comparison's
// section: the metric, A, B, the change, the change in percent and the
// mark, as the terminal, the HTML page and the Markdown summary show them.
func compareCells(s CompareSection) [][]string {
	rows := make([][]string, 0, len(s.Rows))
	for _, r := range s.Rows {
		rows = append(rows, []string{string(r.Metric), compareValue(r.Metric, r.A), compareValue(r.Metric, r.B),
			r.delta(), r.changePercent(), r.Mark.String()})
	}
	return rows
}

// countersTitle titles the broker's own counters.
const countersTitle = "Broker (its own counters, from $SYS or Prometheus: at the start, before the first publish; at the end, after the drain)"

// countersHead heads the broker's own counters.
var countersHead = []string{"counter", "start", "end", "change", "max"}

// countersCells is one row per counter the broker reported at either end
// of the run, nil when it reported none: start, end, their change, and
// for a gauge (clients, memory, subscriptions) its largest reading over
// the run (the metric broker.<name>.max).
func countersCells(r *Result) [][]string {
	if !r.CountersStart.Sampled() && !r.CountersEnd.Sampled() {
		return nil
	}
	var rows [][]string
	for c := range brokerstat.NumCounters {
		s, ok1 := r.CountersStart.Get(c)
		e, ok2 := r.CountersEnd.Get(c)
		if !ok1 && !ok2 {
			if v, ok := r.Measured.Top[counterMetric[c]].(int); ok && c.Cumulative() && v == 0 {
				// Known unchanged though in neither reading: a broker
				// that publishes a counter only when it changed did not.
				rows = append(rows, []string{c.String(), absent, absent, "+0 (not republished)", absent})
			}
			continue
		}
		f := func(v int64) string { return fmt.Sprint(v) }
		if c == brokerstat.MemoryBytes {
			f = fmtMemory
		}
		cell := func(v int64, ok bool) string {
			if !ok {
				return absent
			}
			return f(v)
		}
		change := absent
		if ok1 && ok2 {
			if c == brokerstat.MemoryBytes {
				change = fmtMemoryChange(e - s)
			} else {
				change = fmt.Sprintf("%+d", e-s)
			}
		}
		peak := absent
		if !c.Cumulative() {
			if v, ok := r.Measured.Top[counterMetric[c]].(int); ok {
				peak = f(int64(v))
			}
		}
		rows = append(rows, []string{c.String(), cell(s, ok1), cell(e, ok2), change, peak})
	}
	return rows
}

// fmtMemory writes a broker's memory figure in a unit that shows it:
// bytes under 1 KiB, KiB under 1 MiB, else MiB (Mosquitto's heap is often
// a few hundred KiB, which "0.2 MiB" would blur).
func fmtMemory(n int64) string {
	a := n
	if a < 0 {
		a = -a
	}
	switch {
	case a < 1<<10:
		return fmt.Sprintf("%d B", n)
	case a < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// fmtMemoryChange is fmtMemory with its sign, never "-0.0": a change
// too small for the unit's one decimal is in a smaller unit.
func fmtMemoryChange(d int64) string {
	if d >= 0 {
		return "+" + fmtMemory(d)
	}
	return fmtMemory(d)
}
