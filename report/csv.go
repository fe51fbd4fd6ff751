package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/stats"
)

// csvHeader names the CSV timeline's columns, in order. Times are in
// seconds since the run's start, latencies in milliseconds, rates in
// messages per second.
var csvHeader = []string{
	"at_s", "phase", "group", "sent", "received", "send_rate", "recv_rate",
	"p50_ms", "p99_ms", "max_ms", "connected", "errors", "disconnects", "lag_max_ms",
	"broker_cpu_percent", "broker_rss_bytes", "mqplan_cpu_percent", "mqplan_rss_bytes",
}

func init() {
	// The broker's own counters' columns, named after brokerstat's
	// counters so that the two cannot drift: broker_clients,
	// broker_publish_received, ... in the counters' order.
	for c := range brokerstat.NumCounters {
		if c == 0 {
			csvCounterCol = len(csvHeader)
		}
		csvHeader = append(csvHeader, "broker_"+c.String())
	}
	csvGenCol = len(csvHeader)
	csvHeader = append(csvHeader, "mqplan_cpu_wait_ms", "mqplan_busy", "cpu_pressure_ms")
}

// csvGenCol is the index of mqplan_cpu_wait_ms, the first of mqplan's
// own disturbance's columns (set by init, after the broker's counters').
var csvGenCol int

// csvCounterCol is the index of broker_clients, the first of the broker's
// own counters' columns (one per brokerstat.Counter, in its order; set
// with them by init).
var csvCounterCol int

// csvProcCol is the index of broker_cpu_percent, the first of the
// processes' columns (two each, in the order of processes), found by
// name so that a column added elsewhere cannot shift it.
var csvProcCol = slices.Index(csvHeader, "broker_cpu_percent")

// csvTotal is the group column of the row that sums a second's groups.
const csvTotal = "total"

// WriteCSV writes the per-second timeline as CSV (RFC 4180, through
// encoding/csv), for spreadsheets and plotting scripts: a header, then
// for each second a row for the whole run (group "total") followed by a
// row per plan group in plan order (so a plan group itself named "total"
// is the second such row of its second). A timeline saved before groups
// were kept per second has the total rows only. The columns (csvHeader):
//
//   - at_s: when the second ended, in seconds since the start (ms precision).
//   - sent, received: messages in that second; a group's received counts
//     deliveries to its clients, duplicates included. The groups' rows add
//     up exactly to the total row.
//   - send_rate, recv_rate: sent and received divided by the second's real
//     length (from the previous row's at_s; the last one is usually
//     shorter than a second).
//   - p50_ms, p99_ms, max_ms: end-to-end latency of that second's
//     deliveries; lag_max_ms: the largest lag behind schedule of its sends.
//   - connected, errors, disconnects: clients connected at the end of the
//     second, errors and connection losses in it.
//   - broker_cpu_percent, broker_rss_bytes, mqplan_cpu_percent,
//     mqplan_rss_bytes: the broker process's (broker.metrics pid or
//     process) and mqplan's own CPU in percent of one core over the
//     second and resident memory at its end, from /proc. They are the
//     process's, not a group's: only the total row has them, and only in
//     a second the process was sampled. Added after the first columns
//     shipped: a script that reads columns by name is unaffected.
//   - broker_clients, broker_publish_received, broker_publish_sent,
//     broker_dropped, broker_memory_bytes, broker_subscriptions: the
//     broker's own counters as it last reported them when the second
//     was taken ($SYS or Prometheus: broker.metrics sys or prometheus),
//     as the broker counts (the PUBLISH and dropped counts since the
//     broker started, not per second); on the total row only, empty
//     when the broker had not reported that figure. Added last, too.
//   - mqplan_cpu_wait_ms, mqplan_busy, cpu_pressure_ms: how disturbed
//     mqplan itself was in the second (Linux): how long its threads,
//     summed, waited for a CPU, its CPU use as a share of the CPUs it was
//     given (1 is all of them), and how long some task of the machine
//     waited for a CPU (/proc/pressure/cpu, empty without it). On the
//     total row only. Added after the broker's counters.
//
// A figure with no sample (no delivery, no send) is an empty cell, never
// 0, so that a chart leaves a gap rather than plotting a false zero.
// The CSV is data for plotting: it holds no verdict and no warnings, so
// it is read next to a report (table, JSON, Markdown) that has them.
func WriteCSV(w io.Writer, r *Result) error {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("writing the CSV timeline: %w", err)
	}
	var prev time.Duration
	for _, s := range r.Timeline {
		length := s.At - prev
		prev = s.At
		at := strconv.FormatFloat(s.At.Seconds(), 'f', 3, 64)
		ph := s.Phase.String()
		total := stats.GroupSecond{Group: csvTotal, Connected: s.Connected, Lost: s.Lost, Sent: s.Sent, Received: s.Received,
			Errors: s.Errors, Disconnects: s.Disconnects, P50: s.P50, P99: s.P99, Max: s.Max, LagMax: s.LagMax}
		row := csvRow(at, ph, length, &total)
		for i, p := range processes {
			if ps := p.get(&s); ps.Sampled {
				row[csvProcCol+2*i] = strconv.FormatFloat(ps.CPU, 'f', 1, 64)
				row[csvProcCol+2*i+1] = csvInt(ps.RSS)
			}
		}
		for c := range brokerstat.NumCounters {
			if v, ok := s.Counters.Get(c); ok {
				row[csvCounterCol+int(c)] = csvInt(v)
			}
		}
		if g := s.Gen; g.Sampled {
			row[csvGenCol], row[csvGenCol+1] = csvMillis(g.Wait), strconv.FormatFloat(g.Busy, 'f', 3, 64)
			if g.HasPressure {
				row[csvGenCol+2] = csvMillis(g.Pressure)
			}
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("writing the CSV timeline: %w", err)
		}
		for i := range s.Groups {
			if err := cw.Write(csvRow(at, ph, length, &s.Groups[i])); err != nil {
				return fmt.Errorf("writing the CSV timeline: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing the CSV timeline: %w", err)
	}
	// A group's name is the only text: from a plan it holds no control
	// character, but the CSV is read in terminals too, so none is ever
	// written as such (TerminalSafe), whatever the Result holds.
	_, err := io.WriteString(w, TerminalSafe(b.String(), "\n\t"))
	return err
}

// csvRow is one row of the CSV timeline: g's figures over a second that
// lasted length and ended at at.
func csvRow(at, ph string, length time.Duration, g *stats.GroupSecond) []string {
	// As many cells as the header, empty unless set: the columns only
	// the total row has (the processes') stay empty here.
	row := make([]string, len(csvHeader))
	copy(row, []string{at, ph, csvText(g.Group), csvInt(g.Sent), csvInt(g.Received), "", "", "", "", "",
		strconv.Itoa(g.Connected), csvInt(g.Errors), csvInt(g.Disconnects)})
	if length > 0 {
		row[5], row[6] = csvRate(g.Sent, length), csvRate(g.Received, length)
	}
	if hasLatency(g.Received, g.Max) {
		row[7], row[8], row[9] = csvMillis(g.P50), csvMillis(g.P99), csvMillis(g.Max)
	}
	if g.Sent > 0 {
		row[13] = csvMillis(g.LagMax)
	}
	return row
}

// csvText keeps a name from being taken for a formula by a spreadsheet
// (CSV injection, as OWASP words it): a cell that starts with = + - @, a
// tab or a carriage return is written behind an apostrophe. Group names
// may start with - (-2-3 is a valid name, and a spreadsheet computes -5
// from it), so no name that starts so is left as it is.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func csvInt(n int64) string { return strconv.FormatInt(n, 10) }

// csvRate is n messages over d, per second, to a tenth.
func csvRate(n int64, d time.Duration) string {
	return strconv.FormatFloat(float64(n)/d.Seconds(), 'f', 1, 64)
}

// csvMillis is d in milliseconds to the microsecond, the histograms'
// resolution.
func csvMillis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}
