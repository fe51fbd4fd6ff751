package report

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// reqRespValue computes the request/response metrics of a scope; handled
// is false for any other metric. The counts exist only in a scope that
// requests or answers, so that a threshold on them over a plan without
// request/response fails for want of samples, never passes on a zero.
func reqRespValue(m *stats.Metrics, name metric.Name) (val any, ok, handled bool) {
	q := &m.ReqResp
	requesting := q.Requests > 0 || q.Expected > 0
	count := func(n int64, present bool) (any, bool, bool) {
		if !present {
			return nil, false, true
		}
		return n, true, true
	}
	switch name {
	case metric.Requests:
		return count(q.Requests, requesting)
	case metric.ResponsesExpected:
		return count(q.Expected, requesting)
	case metric.Responses:
		return count(q.Responses, requesting)
	case metric.ResponsesLate:
		return count(q.Late, requesting)
	case metric.ResponsesDuplicates:
		return count(q.Duplicates, requesting)
	case metric.RTTTimeouts:
		return count(q.Timeouts, requesting)
	case metric.ResponsesSent:
		return count(q.Sent, q.Sent > 0 || q.Failed > 0 || requesting)
	}
	if family, stat, ok := name.Split(); ok && family == "rtt" {
		v, ok := histStat(q.RTT, stat)
		return v, ok, true
	}
	return nil, false, false
}

// writeRequests adds request/response to explain, for a plan that has it:
// who answers whom, and per publishing phase the requests and the answers
// they imply, exact (plans.PhasePlan.Requests and Responses).
func writeRequests(b *strings.Builder, prog *plans.Program) error {
	var total int64
	for _, ph := range prog.Phases {
		total += ph.Requests
	}
	if total == 0 {
		return nil
	}
	p := prog.Plan
	b.WriteString("\nrequest/response (MQTT 5: response topic and correlation data)\n")
	for gi, g := range p.Groups {
		gp := &prog.Groups[gi]
		switch {
		case g.Respond != nil:
			fmt.Fprintf(b, "  responders %s: %d clients subscribed to %s at QoS %d, answering each request with %dB at QoS 0\n",
				g.Name, gp.Count, g.Respond.Topic, g.Respond.QoS, g.Respond.Size)
		case g.Publish != nil && !g.Publish.ResponseTopic.IsZero():
			fmt.Fprintf(b, "  requesters %s: %d clients, answers on %s within %s, answers per request: %s\n",
				g.Name, gp.Count, g.Publish.ResponseTopic, fmtDuration(g.Publish.ResponseTimeout), fmtFloat(answersPerRequest(prog, gi)))
		}
	}
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\trequests/s\tanswers/s\trequests\texpected answers\t")
	for _, ph := range prog.Phases {
		if ph.Requests == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t\n", ph.Phase, fmtFloat(ph.Rate(ph.Requests)), fmtFloat(ph.Rate(ph.Responses)), ph.Requests, ph.Responses)
	}
	return tw.Flush()
}

// answersPerRequest is the answers one request of group gi implies,
// averaged over its clients (exact per client in ClientPublish).
func answersPerRequest(prog *plans.Program, gi int) float64 {
	gp := &prog.Groups[gi]
	if gp.Count == 0 {
		return 0
	}
	sum := 0
	for _, c := range prog.Clients[gp.First : gp.First+gp.Count] {
		sum += c.Publish.ExpectedResponses
	}
	return float64(sum) / float64(gp.Count)
}

// rttRows is the request round trip's row of the latency table (steady
// phase, as e2e), none for a plan without request/response, so that the
// tables of other plans stay as they were.
func rttRows(st *stats.Stats) []LatencyRow {
	ph := st.Phase(phase.Steady)
	if ph == nil {
		return nil
	}
	h := ph.Total.ReqResp.RTT
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	return []LatencyRow{{Name: "rtt", Samples: h.TotalCount(), Min: micros(h.Min()), Mean: microsF(h.Mean()),
		P50: micros(h.ValueAtQuantile(50)), P90: micros(h.ValueAtQuantile(90)), P99: micros(h.ValueAtQuantile(99)),
		P999: micros(h.ValueAtQuantile(99.9)), Max: micros(h.Max())}}
}

// requestsTitle titles the request/response section of every format.
const requestsTitle = "Request/response (steady-phase requests, answers during drain included; timeouts = expected - on time)"

// requestsHead heads the request/response table.
var requestsHead = []string{"group", "requests", "expected answers", "on time", "late", "duplicates", "timeouts", "answers sent", "rtt p50", "rtt p99"}

// requestsCells is one row per group that requests or answers, and a
// total; nil for a run without request/response, whose reports keep
// their sections as they were. Read from the metric sets, so a result
// read back from JSON shows the same.
func requestsCells(r *Result) [][]string {
	var rows [][]string
	row := func(name string, m metric.Set) []string {
		return []string{name, count(m, metric.Requests), count(m, metric.ResponsesExpected), count(m, metric.Responses),
			count(m, metric.ResponsesLate), count(m, metric.ResponsesDuplicates), count(m, metric.RTTTimeouts),
			count(m, metric.ResponsesSent), duration(m, metric.RTTP50), duration(m, metric.RTTP99)}
	}
	for _, g := range r.Groups {
		m := r.Measured.Groups[g.Name]
		_, req := m[metric.Requests]
		_, ans := m[metric.ResponsesSent]
		if req || ans {
			rows = append(rows, row(g.Name, m))
		}
	}
	if rows == nil {
		return nil
	}
	return append(rows, row("total", r.Measured.Top))
}

// writeRequestsTable is the terminal table's request/response section.
func writeRequestsTable(b *bytes.Buffer, r *Result) error {
	rows := requestsCells(r)
	if rows == nil {
		return nil
	}
	section(b, requestsTitle)
	return render(newTable(b, requestsHead...), rows)
}

// mdRequests is the Markdown summary's request/response section.
func mdRequests(b *bytes.Buffer, r *Result) {
	rows := requestsCells(r)
	if rows == nil {
		return
	}
	b.WriteString("### Request/response\n\n" + mdText(requestsTitle) + "\n\n")
	for i := range rows {
		rows[i][0] = mdText(rows[i][0])
	}
	rows[len(rows)-1][0] = "**total**"
	mdTable(b, requestsHead, 1, rows)
}

// comparedRequests are the request/response figures mqplan compare
// shows when either run had request/response (reqresp metrics are absent
// otherwise, so other comparisons keep their rows).
var comparedRequests = []compared{
	{name: metric.RTTP50, higherBetter: false},
	{name: metric.RTTP99, higherBetter: false},
	{name: metric.RTTTimeouts, higherBetter: false},
}

// receives says whether a group's clients receive the run's messages, so
// that its delivery figures are the deliveries to it: subscribers, and
// responders (their requests). A requester's answers are not deliveries.
func receives(g *plans.Group) bool { return len(g.Subscribe) > 0 || g.Respond != nil }
