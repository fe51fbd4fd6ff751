package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/stats"
)

// The Markdown summary (--out md=FILE, and what `mqplan run` appends to
// GITHUB_STEP_SUMMARY): a pull request's reader sees the verdict, every
// threshold with what it measured, the groups, latency and delivery
// tables, the warnings, and a small chart of the run over time, in
// Markdown as GitHub renders it (tables, alerts, Mermaid). Text that came
// from a plan or a run is escaped, so that a plan name or an error message
// can neither break a table nor inject markup.

// mdChartPoints bounds the points of each chart line: Mermaid draws every
// category label, and a long run's thousands of seconds would be an
// unreadable, heavy chart. Longer timelines are downsampled into buckets of
// consecutive seconds.
const mdChartPoints = 60

// WriteMarkdown writes the result as a Markdown summary (see above). Like
// every format it renders from the Result alone, with the broker URL's
// password masked.
func WriteMarkdown(w io.Writer, r *Result) error {
	var b bytes.Buffer
	mdHeader(&b, r)
	mdThresholds(&b, r)
	mdBaseline(&b, r)
	mdGroups(&b, r)
	mdStages(&b, r)
	mdLatency(&b, r)
	mdClocks(&b, r)
	mdDelivery(&b, r)
	mdRequests(&b, r)
	mdCounters(&b, r)
	mdProcesses(&b, r)
	mdErrors(&b, r)
	mdChart(&b, r)
	_, err := w.Write(b.Bytes())
	return err
}

// verdictMark is the verdict's symbol, so that it reads at a glance in a
// list of step summaries.
func verdictMark(v string) string {
	switch v {
	case VerdictPass:
		return "✅"
	case VerdictFail:
		return "❌"
	default:
		return "⚠️"
	}
}

func mdHeader(b *bytes.Buffer, r *Result) {
	v := r.Verdict()
	fmt.Fprintf(b, "## %s mqplan %s: %s\n\n", verdictMark(v), mdText(r.titled()), v)
	fmt.Fprintf(b, "**%s**\n\n", mdText(r.Summary()))
	if d := disturbanceLine(r); d != "" {
		fmt.Fprintf(b, "%s\n\n", mdText(d))
	}
	if r.Plan != nil {
		if d := strings.Join(strings.Fields(r.Plan.Description), " "); d != "" {
			fmt.Fprintf(b, "%s\n\n", mdText(d))
		}
		if r.Plan.File != "" {
			fmt.Fprintf(b, "- plan file: %s\n", mdCode(r.Plan.File))
		}
	}
	fmt.Fprintf(b, "- broker: %s\n", mdCode(r.brokerLabel()))
	if r.MqplanVersion != "" {
		fmt.Fprintf(b, "- made by: %s\n", mdCode("mqplan "+r.MqplanVersion))
	}
	if !r.Started.IsZero() {
		fmt.Fprintf(b, "- started: %s, ran %s\n", r.Started.UTC().Format("2006-01-02 15:04:05 UTC"), fmtDuration(r.Elapsed))
	} else {
		fmt.Fprintf(b, "- ran %s\n", fmtDuration(r.Elapsed))
	}
	var phases []string
	for _, ph := range r.Phases {
		if ph.Duration() > 0 {
			phases = append(phases, ph.Phase.String()+" "+fmtDuration(ph.Duration()))
		}
	}
	if len(phases) > 0 {
		fmt.Fprintf(b, "- phases: %s\n", strings.Join(phases, ", "))
	}
	b.WriteByte('\n')
	if ws := r.headerWarnings(); len(ws) > 0 {
		// A GitHub alert: rendered as a highlighted box there, and a
		// plain quote elsewhere.
		b.WriteString("> [!WARNING]\n")
		for _, w := range ws {
			fmt.Fprintf(b, "> - %s\n", mdText(w))
		}
		b.WriteByte('\n')
	}
}

func mdThresholds(b *bytes.Buffer, r *Result) {
	if len(r.Thresholds) == 0 {
		b.WriteString("### Thresholds: none\n\n")
		return
	}
	b.WriteString("### Thresholds\n\n")
	if !r.Complete() {
		b.WriteString("Judged on what was measured before the run stopped: no verdict on them stands.\n\n")
	}
	rows := make([][]string, 0, len(r.Thresholds))
	for _, th := range r.Thresholds {
		mark, res := "✅", "PASS"
		if th.NotJudged != "" {
			mark, res = "⚠️", notJudgedMark+": "+mdText(th.NotJudged)
		} else if !th.Pass {
			mark, res = "❌", "FAIL"
			if th.Reason != "" && th.Reason != "false" {
				res += ": " + mdText(th.Reason)
			}
		}
		expr := mdCell(th.Expr)
		if th.Builtin {
			expr += " (built in)"
		}
		rows = append(rows, []string{mark, expr, mdCell(orDash(measuredValues(th.Values))), res})
	}
	mdTable(b, []string{"", "threshold", "measured", "result"}, 4, rows)
}

func mdGroups(b *bytes.Buffer, r *Result) {
	if len(r.Groups) == 0 {
		return
	}
	b.WriteString("### Groups\n\nMessages over the steady phase" + r.steadyLength() + "; clients over the whole run.\n\n")
	var rows [][]string
	for _, g := range r.Groups {
		m := r.Measured.Groups[g.Name]
		rows = append(rows, []string{
			mdText(g.Name), g.role(), itoa(g.Clients), itoa(g.Connected), itoa(g.Lost),
			count(m, metric.Sent), count(m, metric.Received), rate(m, metric.SendRate, 1), rate(m, metric.RecvRate, 1),
		})
	}
	top := r.Measured.Top
	rows = append(rows, []string{"**total**", "", "", "", "", count(top, metric.Sent), count(top, metric.Received),
		rate(top, metric.SendRate, 1), rate(top, metric.RecvRate, 1)})
	mdTable(b, []string{"group", "role", "clients", "connected", "clients lost", "sent", "received", "send/s", "recv/s"}, 2, rows)
}

func mdLatency(b *bytes.Buffer, r *Result) {
	if len(r.Latency) == 0 {
		return
	}
	b.WriteString("### Latency\n\ne2e and ack over the steady phase; connect and subscribe over the whole run.\n\n")
	mdTable(b, latencyHead, 1, latencyCells(r))
}

func mdDelivery(b *bytes.Buffer, r *Result) {
	if len(r.Groups) == 0 {
		return
	}
	b.WriteString("### Delivery\n\nSteady-phase messages, deliveries during drain included; a subscribing group counts deliveries to its clients, a publishing group deliveries of its messages.\n\n")
	rows := deliveryCells(r)
	for i := range rows {
		rows[i][0] = mdText(rows[i][0])
	}
	rows[len(rows)-1][0] = "**total**"
	mdTable(b, deliveryHead, 1, rows)
	if note := ambiguousNote(r); note != "" {
		b.WriteString(mdText(note) + "\n\n")
	}
}

// mdCounters writes the broker's own counters, when it reported any.
func mdCounters(b *bytes.Buffer, r *Result) {
	rows := countersCells(r)
	if rows == nil {
		return
	}
	b.WriteString("### Broker\n\n" + mdText("Its own counters, from $SYS or Prometheus: at the start (before the first publish) and at the end (after the drain).") + "\n\n")
	mdTable(b, countersHead, 1, rows)
}

// mdProcesses writes the broker's (broker.metrics) and mqplan's own CPU
// and memory, when either was sampled, so that a reader sees whether the
// generator or the broker was the limit.
func mdProcesses(b *bytes.Buffer, r *Result) {
	rows := processesCells(r)
	if len(rows) == 0 {
		return
	}
	b.WriteString("### Processes\n\nFrom /proc, once a second; CPU in % of one core.\n\n")
	mdTable(b, processesHead, 1, rows)
}

func mdErrors(b *bytes.Buffer, r *Result) {
	if len(r.ErrorSamples) == 0 {
		return
	}
	fmt.Fprintf(b, "### Errors\n\n%s in all, by kind, over the whole run:\n\n", count(r.Measured.Top, metric.Errors))
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(b, "- %s\n", mdCode(e))
	}
	b.WriteByte('\n')
}

// mdChart draws the timeline as three Mermaid xychart-beta line charts,
// one series each (xychart has no legend, and the send and receive lines
// lie on each other): the send rate, the receive rate and the p99
// latency, at most mdChartPoints points each.
func mdChart(b *bytes.Buffer, r *Result) {
	pts := chartPoints(r.Timeline, mdChartPoints)
	if len(pts) == 0 {
		return
	}
	sent := make([]string, len(pts))
	recv := make([]string, len(pts))
	p99 := make([]string, len(pts))
	for i, p := range pts {
		sent[i] = strconv.FormatFloat(p.sendRate, 'f', -1, 64)
		recv[i] = strconv.FormatFloat(p.recvRate, 'f', -1, 64)
		p99[i] = strconv.FormatFloat(p.p99ms, 'f', -1, 64)
	}
	per := ""
	if pts[0].seconds > 1 {
		per = fmt.Sprintf(", averaged over %d s", pts[0].seconds)
	}
	// A numeric x axis from the first point to the last: Mermaid spaces
	// the points evenly over it and picks a few round ticks, where a
	// label per point ran together (and two close ends read alike).
	first, last := pts[0].at.Seconds(), pts[len(pts)-1].at.Seconds()
	if last <= first {
		last = first + 1
	}
	xAxis := fmt.Sprintf("    x-axis \"seconds since start\" %s --> %s\n", strconv.FormatFloat(first, 'f', -1, 64), strconv.FormatFloat(last, 'f', -1, 64))
	b.WriteString("### Over time\n\n")
	fmt.Fprintf(b, "Send and receive rates in messages per second%s, one chart each.\n\n", per)
	mdLineChart(b, "Send rate (msg/s)", xAxis, "msg/s", mdSentColor, sent)
	b.WriteByte('\n')
	mdLineChart(b, "Receive rate (msg/s)", xAxis, "msg/s", mdReceivedColor, recv)
	b.WriteByte('\n')
	worst := ""
	if pts[0].seconds > 1 {
		worst = fmt.Sprintf(", the worst second of every %d", pts[0].seconds)
	}
	fmt.Fprintf(b, "End-to-end latency p99 of the deliveries received in each second%s, in milliseconds (0 where nothing was received).\n\n", worst)
	mdLineChart(b, "Latency p99 (ms)", xAxis, "ms", mdLatencyColor, p99)
}

// The Markdown charts' colours: Mermaid's default palette starts with a
// pale lavender that a single line on white barely shows; these are the
// HTML page's, strong on a light and a dark background alike.
const (
	mdSentColor     = "#0969da"
	mdReceivedColor = "#1a7f37"
	mdLatencyColor  = "#cf222e"
)

// mdLineChart writes one xychart-beta chart of one line in colour, its
// palette set by an init directive (GitHub and mermaid-cli honour it).
func mdLineChart(b *bytes.Buffer, title, xAxis, yUnit, colour string, values []string) {
	fmt.Fprintf(b, "```mermaid\n%%%%{init: {\"theme\": \"base\", \"themeVariables\": {\"xyChart\": {\"plotColorPalette\": \"%s\"}}}}%%%%\n", colour)
	fmt.Fprintf(b, "xychart-beta\n    title %s\n", strconv.Quote(title))
	b.WriteString(xAxis)
	fmt.Fprintf(b, "    y-axis %s\n", strconv.Quote(yUnit))
	fmt.Fprintf(b, "    line [%s]\n", strings.Join(values, ", "))
	b.WriteString("```\n")
}

// chartPoint is one point of the charts: a bucket of consecutive seconds.
type chartPoint struct {
	// at is the bucket's end, as an offset from the start.
	at time.Duration
	// seconds is how many timeline entries the bucket holds.
	seconds int
	// sendRate and recvRate are messages per second over the bucket's
	// length, rounded to 0.1; p99ms is the worst second's p99 in
	// milliseconds, rounded to the microsecond, 0 when nothing arrived.
	sendRate, recvRate, p99ms float64
}

// chartPoints downsamples the timeline into at most n buckets of equal
// size (the last may be shorter). A bucket's rates are its messages over
// its length, so that a short last second does not read as a drop; its
// p99 is the worst of its seconds', since averaging percentiles would hide
// the spike a reader looks for.
func chartPoints(tl []stats.Second, n int) []chartPoint {
	if len(tl) == 0 || n <= 0 {
		return nil
	}
	size := (len(tl) + n - 1) / n
	var out []chartPoint
	prevEnd := tl[0].At - time.Second
	if prevEnd < 0 {
		prevEnd = 0
	}
	for start := 0; start < len(tl); start += size {
		end := min(start+size, len(tl))
		var sent, recv int64
		var p99 time.Duration
		for _, s := range tl[start:end] {
			sent += s.Sent
			recv += s.Received
			if s.Received > 0 {
				p99 = max(p99, s.P99)
			}
		}
		at := tl[end-1].At
		secs := (at - prevEnd).Seconds()
		if secs <= 0 {
			secs = float64(end - start)
		}
		prevEnd = at
		out = append(out, chartPoint{
			at:       at.Round(100 * time.Millisecond),
			seconds:  end - start,
			sendRate: roundTo(float64(sent)/secs, 10),
			recvRate: roundTo(float64(recv)/secs, 10),
			p99ms:    roundTo(float64(p99)/float64(time.Millisecond), 1000),
		})
	}
	return out
}

// roundTo rounds x to 1/scale.
func roundTo(x, scale float64) float64 {
	return float64(int64(x*scale+0.5)) / scale
}

// mdTable writes a Markdown table whose first left columns hold text,
// left-aligned, and the others numbers, right-aligned so that digits line
// up (as the terminal table does).
func mdTable(b *bytes.Buffer, header []string, left int, rows [][]string) {
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	for i := range header {
		if i < left {
			b.WriteString("|---")
		} else {
			b.WriteString("|--:")
		}
	}
	b.WriteString("|\n")
	for _, row := range rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteByte('\n')
}

// mdText escapes text for Markdown prose and table cells: the characters
// that would start emphasis, code, links, HTML, entities or strikethrough,
// or end a table cell, are backslash-escaped, and line breaks become
// spaces, so that the text reads as written.
func mdText(s string) string {
	var b strings.Builder
	rs := []rune(oneLine(s))
	for i, c := range rs {
		switch c {
		case '_':
			// Inside a word (lost_unsent) an underscore never starts
			// emphasis: left as it is, the text stays legible raw.
			if i == 0 || i == len(rs)-1 || !isWordRune(rs[i-1]) || !isWordRune(rs[i+1]) {
				b.WriteByte('\\')
			}
		case '\\', '`', '*', '[', ']', '<', '>', '&', '|', '~', '#', '!', '$':
			// $ opens GitHub's math ($x$, $$x$$), which would render
			// the text, not show it.
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// isWordRune reports whether c is an ASCII letter or digit.
func isWordRune(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// mdCode shows s as inline code, fenced with more backticks than it holds
// in a row, for prose and list items: a bar there is a literal bar, and a
// backslash before it would show, since code spans take no escapes. A
// table cell uses mdCell.
func mdCode(s string) string {
	s = oneLine(s)
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// mdCell is s for a table cell: inline code, unless s holds a bar. A bar
// in a cell must be escaped (\|) or it ends the cell; GitHub's table
// parser removes that backslash before it reads code spans (GFM spec,
// example 200), but renderers that read code spans first show it. So a
// text with a bar is written as escaped text instead, which every
// renderer shows as written (\| outside code is a plain escape).
func mdCell(s string) string {
	if strings.ContainsRune(s, '|') {
		return mdText(s)
	}
	return mdCode(s)
}

// oneLine joins a text's lines with spaces and drops other control
// characters, which Markdown tables and list items cannot hold.
func oneLine(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c == '\n' || c == '\r' || c == '\t':
			return ' '
		case c < 0x20 || c == 0x7f:
			return -1
		}
		return c
	}, s)
}

// mdBaseline writes the comparison with the baseline run (--baseline),
// when there is one, as the table does: baseline as A, this run as B, a
// table for the total and one per group both have, and the comparison's
// summary, so that a pull request's step summary shows how far a "no
// worse than last release" gate was from failing.
func mdBaseline(b *bytes.Buffer, r *Result) {
	c := r.Comparison
	if c == nil {
		return
	}
	b.WriteString("### Compared with the baseline " + mdCode(c.A.Label) + "\n\n")
	for _, n := range c.Notes {
		b.WriteString("- " + mdText(n) + "\n")
	}
	if len(c.Notes) > 0 {
		b.WriteByte('\n')
	}
	for _, sec := range c.Sections {
		title := "Total"
		if sec.Group != "" {
			title = "Group " + mdText(sec.Group)
		}
		b.WriteString("**" + title + "**\n\n")
		rows := compareCells(sec)
		for _, row := range rows {
			row[0] = mdCell(row[0])
		}
		mdTable(b, baselineHead, 1, rows)
	}
	b.WriteString(mdText(c.Summary()) + "\n\n")
}
