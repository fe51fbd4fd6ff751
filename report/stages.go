package report

import (
	"bytes"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// Per-stage figures (issue 10): a staged plan's report has one row per
// stage, from the metric sets the thresholds read as stages.<name>.*, so
// that the table, the HTML page, the Markdown summary and `mqplan
// report` (which reads the sets back from the JSON) show the same
// figures.

// stageSets is each stage's metric set, keyed by the stage's name: the
// messages intended within its window (stats.StageStats), rates over its
// planned duration, and only the metrics a stage measures
// (threshold.StageMetric); nil without stages.
func stageSets(st *stats.Stats) map[string]metric.Set {
	if len(st.Stages) == 0 {
		return nil
	}
	out := make(map[string]metric.Set, len(st.Stages))
	for i := range st.Stages {
		s := &st.Stages[i]
		set := metricSet(view{msg: &s.Metrics, conn: &s.Metrics, dur: s.Duration(), subscriberView: true})
		for name := range set {
			if !threshold.StageMetric(name) {
				delete(set, name)
			}
		}
		out[s.Name] = set
	}
	return out
}

// stageRow is one stage of the plan, as the report lists it.
type stageRow struct {
	name          string
	start, length time.Duration // from the start of the first stage
}

// stageRows lists the plan's stages in timeline order with their
// windows; nil when the plan has none or the run measured none.
func (r *Result) stageRows() []stageRow {
	if r.Plan == nil || len(r.Plan.Stages) == 0 || len(r.Measured.Stages) == 0 {
		return nil
	}
	names := plans.StageNames(r.Plan)
	out := make([]stageRow, len(names))
	var at time.Duration
	for i, name := range names {
		d := r.Plan.Stages[i].Duration
		out[i] = stageRow{name: name, start: at, length: d}
		at += d
	}
	return out
}

// stagesHead heads the stages table.
var stagesHead = []string{"stage", "at", "length", "sent", "expected", "received", "lost", "dup",
	"loss rate", "send/s", "recv/s", "p50", "p90", "p99", "max", "mean"}

// stagesCells is one row per stage: its messages' publishes, deliveries
// and latency. A stage of length 0 (a jump) sends nothing and shows its
// counts as 0 and its rates as "-".
func stagesCells(r *Result) [][]string {
	var rows [][]string
	for _, s := range r.stageRows() {
		m := r.Measured.Stages[s.name]
		rows = append(rows, []string{
			s.name, fmtDuration(s.start), fmtDuration(s.length),
			count(m, metric.Sent), count(m, metric.Expected), count(m, metric.Received), count(m, metric.Lost),
			count(m, metric.Duplicates), percent(m, metric.LossRate),
			rate(m, metric.SendRate, 1), rate(m, metric.RecvRate, 1),
			duration(m, metric.LatencyP50), duration(m, metric.LatencyP90), duration(m, metric.LatencyP99),
			duration(m, metric.LatencyMax), duration(m, metric.LatencyMean),
		})
	}
	return rows
}

// stagesTitle titles the stages section in every format.
const stagesTitle = "Stages (the messages intended in each stage, deliveries after it included; at: from the first stage's start; rates over the stage's length; latency e2e)"

// writeStageTable writes the stages table of a staged plan; nothing otherwise.
func writeStageTable(b *bytes.Buffer, r *Result) error {
	cells := stagesCells(r)
	if len(cells) == 0 {
		return nil
	}
	section(b, stagesTitle)
	return render(newTableAligned(b, []align{alignLeft}, stagesHead...), cells)
}

// stageSetsJSON is metricSetsJSON for the stages, nil (left out of the
// JSON) without stages.
func stageSetsJSON(m map[string]metric.Set) map[string]jsonMetricSet {
	if len(m) == 0 {
		return nil
	}
	return metricSetsJSON(m)
}

// stageIndexRef reads the [2]. of stages[2].p99 (how threshold.Ref
// writes an unnamed stage): the name (its digits) and what follows.
func stageIndexRef(scope threshold.Scope, rest string) (name, tail string, ok bool) {
	if scope != threshold.Stages || len(rest) < 2 || rest[0] != '[' || rest[1] < '0' || rest[1] > '9' {
		return "", "", false
	}
	end := strings.Index(rest, "].")
	if end < 0 {
		return "", "", false
	}
	for _, c := range rest[1:end] {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	return rest[1:end], rest[end+2:], true
}

// mdStages writes the stages table of a staged plan in the Markdown
// summary; nothing otherwise.
func mdStages(b *bytes.Buffer, r *Result) {
	rows := stagesCells(r)
	if rows == nil {
		return
	}
	for i := range rows {
		rows[i][0] = mdText(rows[i][0])
	}
	b.WriteString("### Stages\n\n" + mdText("The messages intended in each stage, deliveries after it included; at: from the first stage's start; rates over the stage's length; latency e2e.") + "\n\n")
	mdTable(b, stagesHead, 1, rows)
}

// stagesJSON is a stage list (the plan's or a group's) as the plan echo
// writes it; nil for none.
func stagesJSON(stages []plans.Stage) []jsonPlanStage {
	var out []jsonPlanStage
	for _, st := range stages {
		out = append(out, jsonPlanStage{Name: st.Name, Duration: jsonDuration(st.Duration), Rate: st.Rate, Every: jsonDuration(st.Every), Clients: st.Clients})
	}
	return out
}

// stagesOf reads a stage list of the plan echo back.
func stagesOf(js []jsonPlanStage) []plans.Stage {
	var out []plans.Stage
	for _, st := range js {
		out = append(out, plans.Stage{Name: st.Name, Duration: time.Duration(st.Duration), Rate: st.Rate, Every: time.Duration(st.Every), Clients: st.Clients})
	}
	return out
}
