package report

import (
	"bytes"
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/threshold"
)

// WriteTable writes the human summary: a header line, warnings, then the
// groups, latency, delivery, generator-health, broker (embedded only),
// errors and thresholds sections, and a final verdict line (Result.Summary).
//
// The output is meant for terminals and CI logs alike: plain ASCII borders,
// no colour codes, headers exactly as written (see asciiTable), and no
// control character but newline: any other, from a broker's text or a
// hand-edited result, shows escaped (TerminalSafe). Metrics
// with no samples show as "-", never as 0. The whole report is built in memory and written at once, so a write
// error is returned rather than leaving half a table behind silently.
func WriteTable(w io.Writer, r *Result) error {
	var b bytes.Buffer
	steps := []func(*bytes.Buffer, *Result) error{
		writeHeader,
		writeGroups,
		writeStageTable,
		writeLatency,
		writeClocks,
		writeDelivery,
		writeRequestsTable,
		writeHealth,
		writeBroker,
		writeCounters,
		writeProcesses,
		writeDisturbance,
		writeErrors,
		writeThresholds,
		writeBaseline,
	}
	for _, step := range steps {
		if err := step(&b, r); err != nil {
			return err
		}
	}
	b.WriteString(r.Summary())
	b.WriteByte('\n')
	// The last guard: whatever text came from outside (a broker's
	// reason, a hand-edited result) shows escaped, never acts.
	_, err := io.WriteString(w, TerminalSafe(b.String(), "\n"))
	return err
}

// section writes a blank line and a section title.
func section(b *bytes.Buffer, title string) {
	b.WriteByte('\n')
	b.WriteString(title)
	b.WriteByte('\n')
}

func writeHeader(b *bytes.Buffer, r *Result) error {
	fmt.Fprintf(b, "mqplan %s | broker %s | %s | %s\n", r.titled(), r.brokerLabel(), fmtDuration(r.Elapsed), r.Verdict())
	if r.Plan != nil {
		for _, line := range strings.Split(strings.TrimSpace(r.Plan.Description), "\n") {
			// A description may hold tabs (plans allows them): shown
			// as spaces, as table cells show theirs.
			if line = strings.TrimSpace(strings.ReplaceAll(line, "\t", strings.Repeat(" ", tabWidth))); line != "" {
				b.WriteString(line)
				b.WriteByte('\n')
			}
		}
	}
	if r.MqplanVersion != "" {
		fmt.Fprintf(b, "made by mqplan %s\n", r.MqplanVersion)
	}
	var phases []string
	for _, ph := range r.Phases {
		if ph.Duration() > 0 {
			phases = append(phases, ph.Phase.String()+" "+fmtDuration(r.shownLength(ph)))
		}
	}
	if len(phases) > 0 {
		fmt.Fprintf(b, "phases: %s\n", strings.Join(phases, ", "))
	}
	// Warnings come first, right under the header, so that nobody reads
	// the figures below without them.
	for _, w := range r.headerWarnings() {
		fmt.Fprintf(b, "WARNING: %s\n", w)
	}
	return nil
}

// insecureWarning is the header warning of a plan that does not verify the
// broker's certificate: a reader of the report (or of a CI log) must not
// take the run for one over verified TLS.
const insecureWarning = "TLS certificates are not verified (broker.tls.insecure_skip_verify: true): any server could have answered"

// headerWarnings are the run's warnings, after the plan's own ones (TLS
// not verified), as the table's header and the JSON's warnings show them.
func (r *Result) headerWarnings() []string {
	if r.Plan == nil || r.Plan.Broker.TLS == nil || !r.Plan.Broker.TLS.InsecureSkipVerify {
		return r.Warnings
	}
	return append([]string{insecureWarning}, r.Warnings...)
}

func orDash(s string) string {
	if s == "" {
		return absent
	}
	return s
}

// steadyLength is the measured window's length for section titles, as
// ", 10s", or "" when the run never reached it.
func (r *Result) steadyLength() string {
	for _, ph := range r.Phases {
		if ph.Phase == phase.Steady {
			return ", " + fmtDuration(ph.Duration())
		}
	}
	return ""
}

// role names what a group does, which decides how its delivery figures
// read.
func (g Group) role() string {
	switch {
	case g.Publishes && g.Subscribes:
		return "pub+sub"
	case g.Publishes:
		return "pub"
	case g.Subscribes:
		return "sub"
	default:
		return absent
	}
}

func writeGroups(b *bytes.Buffer, r *Result) error {
	rates := ""
	if r.RateWindow > 0 {
		rates = "; rates: over the " + fmtDuration(r.RateWindow) + " from first to last delivery"
	}
	section(b, "Groups (messages: steady phase"+r.steadyLength()+rates+"; clients and disconnects: whole run; per client = total / clients)")
	return render(newTableAligned(b, []align{alignLeft, alignLeft}, groupsHead...), groupsCells(r))
}

func writeLatency(b *bytes.Buffer, r *Result) error {
	section(b, "Latency (e2e and ack over the steady phase; connect and subscribe over the whole run)")
	return render(newTable(b, latencyHead...), latencyCells(r))
}

func writeDelivery(b *bytes.Buffer, r *Result) error {
	section(b, "Delivery (steady-phase messages, deliveries during drain included)")
	if err := render(newTable(b, deliveryHead...), deliveryCells(r)); err != nil {
		return err
	}
	// Users ask why a publishing group "receives": say it once, here.
	b.WriteString("a subscribing group counts deliveries to its clients; a publishing group, deliveries of its messages\n")
	b.WriteString("lost = unsent (never sent) + unacked (sent, never acknowledged) + by broker (acknowledged or written, never delivered) + late (still arriving when drain ended)\n")
	if note := ambiguousNote(r); note != "" {
		b.WriteString(note + "\n")
	}
	return nil
}

func writeHealth(b *bytes.Buffer, r *Result) error {
	section(b, "Generator health (steady phase; lag = actual - intended send time; late = lag over "+fmtDuration(stats.LateThreshold)+")")
	return render(newTable(b, healthHead...), healthCells(r))
}

func writeBroker(b *bytes.Buffer, r *Result) error {
	if r.Broker == nil {
		return nil
	}
	section(b, "Embedded broker (its own counters: drops here are the broker's, not mqplan's)")
	t := newTableAligned(b, nil, "publishes in", "publishes out", "dropped: queue full", "dropped: inflight full", "max clients")
	br := r.Broker
	return render(t, [][]string{{
		fmt.Sprint(br.MessagesReceived), fmt.Sprint(br.MessagesSent),
		fmt.Sprint(br.MessagesDropped), fmt.Sprint(br.InflightDropped), fmt.Sprint(br.ClientsMaximum),
	}})
}

// writeCounters shows the broker's own counters (broker.metrics sys or
// prometheus), when it reported any.
func writeCounters(b *bytes.Buffer, r *Result) error {
	rows := countersCells(r)
	if rows == nil {
		return nil
	}
	section(b, countersTitle)
	return render(newTable(b, countersHead...), rows)
}

// writeProcesses shows the broker process's (broker.metrics) and mqplan's
// own CPU and memory over the run's sampled seconds, when any was sampled.
func writeProcesses(b *bytes.Buffer, r *Result) error {
	rows := processesCells(r)
	if len(rows) == 0 {
		return nil
	}
	section(b, processesTitle)
	return render(newTable(b, processesHead...), rows)
}

// fmtBytes writes a byte count as fmtMiB does from 1 MiB up, and below
// it in KiB, to a tenth, or bytes, so that a small size does not show as
// 0.0 MiB.
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20 || n <= -1<<20:
		return fmtMiB(n)
	case n >= 1<<10 || n <= -1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// fmtMiB writes a byte count in MiB, to a tenth.
func fmtMiB(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func writeErrors(b *bytes.Buffer, r *Result) error {
	if len(r.ErrorSamples) == 0 {
		return nil
	}
	section(b, fmt.Sprintf("Errors (%s in all, by kind, over the whole run)", count(r.Measured.Top, metric.Errors)))
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(b, "  %s\n", e)
	}
	return nil
}

func writeThresholds(b *bytes.Buffer, r *Result) error {
	if len(r.Thresholds) == 0 {
		section(b, "Thresholds: none")
		return nil
	}
	section(b, "Thresholds")
	t := newTableAligned(b, []align{alignLeft, alignLeft, alignLeft}, "threshold", "measured", "result")
	var rows [][]string
	for _, th := range r.Thresholds {
		res := "PASS"
		if th.NotJudged != "" {
			res = notJudgedMark
		} else if !th.Pass {
			res = "FAIL"
			// "false" (the expression simply did not hold) says nothing
			// the measured column does not; other reasons (no samples)
			// are the whole story and are shown.
			if th.Reason != "" && th.Reason != "false" {
				res += ": " + th.Reason
			}
		}
		expr := th.Expr
		if th.Builtin {
			expr += " (built in)"
		}
		rows = append(rows, []string{expr, measuredValues(th.Values), res})
	}
	return render(t, rows)
}

// measuredValues shows what a threshold read, as `p99=1.2ms dup_rate=0`,
// with "-" for a metric that had no samples, and a byte metric as the
// table shows memory (`broker.rss.max=512.0 MiB`), so that it reads
// beside the size the threshold wrote (< 2GiB).
func measuredValues(vs []threshold.Value) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		parts = append(parts, v.Ref.String()+"="+measuredValue(v))
	}
	return strings.Join(parts, " ")
}

// measuredValue is one measured value as thresholds write it ("8.03ms",
// "1.2 MiB"), "-" when missing.
func measuredValue(v threshold.Value) string {
	if v.Missing {
		return absent
	}
	val := fmtValue(v.Value)
	if md, ok := metric.Lookup(string(v.Ref.Metric)); ok && md.Unit == metric.Bytes {
		if n, ok := v.Value.(int); ok {
			val = fmtBytes(int64(n))
		}
	}
	return val
}

func itoa(n int) string { return strconv.Itoa(n) }

// count shows a count metric; counts are always measured, but a scope that
// is missing altogether (no such group) shows "-".
func count(m metric.Set, name metric.Name) string {
	if v, ok := m[name]; ok {
		return fmtValue(v)
	}
	return absent
}

// rate shows a rate metric divided by n (the per-client figure when n is
// the group's client count).
func rate(m metric.Set, name metric.Name, n int) string {
	f, ok := m[name].(float64)
	if !ok || n <= 0 {
		return absent
	}
	return fmtRate(f / float64(n))
}

func percent(m metric.Set, name metric.Name) string {
	if f, ok := m[name].(float64); ok {
		return fmtPercent(f)
	}
	return absent
}

func duration(m metric.Set, name metric.Name) string {
	if d, ok := m[name].(time.Duration); ok {
		return fmtDuration(d)
	}
	return absent
}
