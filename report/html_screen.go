package report

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/stats"
)

// htmlTile is one headline figure of the page's first screen: Label over
// Value (its Unit in smaller print), Detail under it in small print; Class (pass, fail, warn or "")
// colours it.
type htmlTile struct {
	Label, Value, Unit, Detail, Class string
}

// tiles are the headline figures a reader looks for first, in the order
// Gatling and k6 show theirs: the verdict, the throughput both ways, the
// latency, what went wrong (loss, duplicates, errors) and the
// connections. A figure the run did not measure shows "-".
func tiles(r *Result) []htmlTile {
	top := r.Measured.Top
	verdict := r.Verdict()
	out := []htmlTile{{Label: "verdict", Value: verdict, Class: strings.ToLower(verdict), Detail: fmtDuration(r.Elapsed)}}
	rateTile := func(label string, rt, n metric.Name, word string) htmlTile {
		t := htmlTile{Label: label, Value: absent, Detail: count(top, n) + " " + word}
		if f, ok := top[rt].(float64); ok {
			t.Value, t.Unit = fmtRate(f), "msg/s"
		}
		return t
	}
	out = append(out, rateTile("sent", metric.SendRate, metric.Sent, "sent"), rateTile("received", metric.RecvRate, metric.Received, "received"))
	out = append(out, htmlTile{Label: "latency p50", Value: duration(top, metric.LatencyP50), Detail: "end to end"},
		htmlTile{Label: "latency p99", Value: duration(top, metric.LatencyP99), Detail: "max " + duration(top, metric.LatencyMax)})
	loss := htmlTile{Label: "loss", Value: percent(top, metric.LossRate), Detail: count(top, metric.Lost) + " lost"}
	if countOf(top, metric.Lost) > 0 {
		loss.Class = "fail"
	}
	dup := htmlTile{Label: "duplicates", Value: count(top, metric.Duplicates), Detail: percent(top, metric.DupRate)}
	if countOf(top, metric.Duplicates) > 0 {
		dup.Class = "warn"
	}
	errs := htmlTile{Label: "errors", Value: count(top, metric.Errors),
		Detail: count(top, metric.Disconnects) + " " + pluralWord(int(countOf(top, metric.Disconnects)), "disconnect", "disconnects")}
	if countOf(top, metric.Errors) > 0 {
		errs.Class = "fail"
	}
	// The peak of the per-second counts: the timeline counts the
	// clients connected at the end of each second.
	peak, planned := 0, 0
	for _, s := range r.Timeline {
		peak = max(peak, s.Connected)
	}
	for _, g := range r.Groups {
		planned += g.Clients
	}
	conns := htmlTile{Label: "peak connections", Value: strconv.Itoa(peak), Detail: "of " + strconv.Itoa(planned) + " planned"}
	if len(r.Timeline) == 0 {
		conns.Value = absent
	}
	return append(out, loss, dup, errs, conns)
}

// builtinsFolded says whether the page folds the built-in checks into
// one row: when every one of them held, they are not the news.
func builtinsFolded(ths []htmlThreshold) bool {
	n := 0
	for _, t := range ths {
		if t.Where == "built in" {
			if !t.Pass {
				return false
			}
			n++
		}
	}
	return n > 1
}

// htmlErrorKind is one row of the errors-by-kind table.
type htmlErrorKind struct {
	Count, Sample string
}

// moreLikeIt is how the runner counts an error kind's further errors
// after its first message (runner's errorSamples).
var (
	moreLikeIt = regexp.MustCompile(`^(.*) \(and (\d+) more like it\)$`)
	otherKinds = regexp.MustCompile(`^(\d+) more of other kinds$`)
)

// errorKinds splits the error samples into a count and the first
// message of each kind; a line of another shape (a hand-edited result)
// is a kind of its own with no count.
func errorKinds(samples []string) []htmlErrorKind {
	var out []htmlErrorKind
	for _, s := range samples {
		switch m, o := moreLikeIt.FindStringSubmatch(s), otherKinds.FindStringSubmatch(s); {
		case m != nil:
			n, _ := strconv.ParseInt(m[2], 10, 64)
			out = append(out, htmlErrorKind{Count: strconv.FormatInt(n+1, 10), Sample: m[1]})
		case o != nil:
			out = append(out, htmlErrorKind{Count: o[1], Sample: "(kinds past the first ones, not sampled)"})
		default:
			out = append(out, htmlErrorKind{Count: "1", Sample: s})
		}
	}
	return out
}

// planSource is the plan as run, as the JSON result echoes it (secrets
// masked, broker URLs redacted), indented for reading; "" without a plan.
func planSource(r *Result) string {
	if r.Plan == nil {
		return ""
	}
	b, err := json.MarshalIndent(planJSON(r.Plan), "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}

// htmlHist is one latency histogram for the page script: bucket upper
// bounds in milliseconds and their counts.
type htmlHist struct {
	Name    string    `json:"name"`
	Samples int64     `json:"samples"`
	Upper   []float64 `json:"upper"`
	Counts  []int64   `json:"counts"`
}

func histData(r *Result) []htmlHist {
	out := []htmlHist{}
	for _, h := range r.Histograms {
		hh := htmlHist{Name: h.Name, Samples: h.Samples}
		for _, b := range h.Buckets {
			hh.Upper = append(hh.Upper, ms(b.Upper))
			hh.Counts = append(hh.Counts, b.Count)
		}
		out = append(out, hh)
	}
	return out
}

// startedMillis is the run's wall-clock start in milliseconds since the
// epoch (the page's wall-clock axis), 0 when not known.
func startedMillis(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMilli())
}

// maxCounterHold is the longest a broker holds a counter it updates:
// Mosquitto's $SYS interval is 10 s by default.
const maxCounterHold = 10

// counterRates are a broker counter's change per second over the
// timeline, with the seconds it held spread: a broker republishes a $SYS
// counter only when it changes (Mosquitto about every other second at
// 100 msg/s), so a held second reads 0 while the real rate is steady.
// Each change is divided over the seconds since the counter last
// changed, the held ones included (a steady 100/s, not 0 and 200 by
// turns), at most maxCounterHold of them. The held seconds after its last change are nil (not known
// yet) unless they last longer than its longest hold before, when the
// broker has gone quiet and they are 0. A counter that went down (a
// restarted broker) or was not sampled is nil for that second.
func counterRates(start brokerstat.Counters, timeline []stats.Second, c brokerstat.Counter) []*float64 {
	out := make([]*float64, len(timeline))
	last, lastOK := start.Get(c)
	// from is the first second of the current hold: the seconds since
	// the last change.
	from, longest := 0, 0
	for i := range timeline {
		v, ok := timeline[i].Counters.Get(c)
		switch {
		case !ok:
			from = i + 1
			lastOK = false
			continue
		case !lastOK || v < last:
			last, lastOK, from = v, true, i+1
			continue
		case v == last:
			continue
		}
		// A hold longer than maxCounterHold is a quiet broker, not a
		// held counter: its seconds before that are 0.
		spread := max(from, i+1-maxCounterHold)
		for j := from; j < spread; j++ {
			out[j] = num(0, true)
		}
		rate := float64(v-last) / float64(i-spread+1)
		for j := spread; j <= i; j++ {
			out[j] = num(rate, true)
		}
		longest = max(longest, i-spread)
		last, from = v, i+1
	}
	if held := len(timeline) - from; held > longest && lastOK {
		for j := from; j < len(timeline); j++ {
			out[j] = num(0, true)
		}
	}
	return out
}

// numericCellRE matches a table cell that is a figure: a number with its
// unit ("12.3 ms", "0.75%", "1m28s", "1234 (5%)") or the absent "-".
var numericCellRE = regexp.MustCompile(`^(-|[-+]?(\d[\d.,]*\s?[a-zA-Zµ%/]*)+(\s\(.*\))?)$`)

// numericCell says whether the page aligns a cell to the right, as
// figures are, for the eye to compare their magnitudes; text is aligned
// left.
func numericCell(s string) bool { return numericCellRE.MatchString(s) }
