package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// stagedCase is the clean fixture run as a staged plan: base (4s), an
// unnamed jump (stage 1, 0s) and peak (6s), each stage's own figures, and
// thresholds that read them by name and by index; peak's p99 fails its
// bound.
func stagedCase(t testing.TB) *Result {
	t.Helper()
	p := testPlan(
		"stages.base.p99 < 10ms and stages.base.loss_rate == 0",
		"stages[1].sent == 0",
		"stages[2].p99 < 5ms",
	)
	p.Groups[1].Publish.Rate = 0
	p.Stages = []plans.Stage{
		{Name: "base", Duration: 4 * time.Second, Rate: 800},
		{Name: "1", Duration: 0, Rate: 800},
		{Name: "peak", Duration: 6 * time.Second, Rate: 800},
	}
	p.Duration = plans.StagesTotal(p.Stages)
	st := fullStats(t)
	st.Stages = []stats.StageStats{
		{Index: 0, Name: "base", Start: 0, End: 4 * time.Second, Metrics: stats.Metrics{
			Sent: 3200, SentBytes: 3200 * 1000, Expected: 3200, Received: 3200, ReceivedBytes: 3200 * 1000,
			Latency: hist(t, 900, 1600, 1500, 1500, 4000, 100), Lag: hist(t, 50, 3200)}},
		{Index: 1, Name: "1", Start: 4 * time.Second, End: 4 * time.Second},
		{Index: 2, Name: "peak", Start: 4 * time.Second, End: 10 * time.Second, Metrics: stats.Metrics{
			Sent: 4800, SentBytes: 4800 * 1000, Expected: 4800, Received: 4799, ReceivedBytes: 4799 * 1000,
			Duplicates: 1, Lost: 2, LostUnacked: 2,
			Latency: hist(t, 1200, 2400, 3000, 2300, 7000, 99), Lag: hist(t, 80, 4800)}},
	}
	return Evaluate(p, withBuiltins(t, p), st)
}

// TestStageEnvironment checks that each stage's set holds what the stage
// measured, its rates over its own length, and nothing a stage does not
// measure (connections, acks).
func TestStageEnvironment(t *testing.T) {
	r := stagedCase(t)
	tests := []struct {
		name, stage, metric string
		want                any
	}{
		{"sent", "base", "sent", 3200},
		{"send rate over the stage's 4s", "base", "send_rate", 800.0},
		{"received", "peak", "received", 4799},
		{"lost", "peak", "lost", 2},
		{"lost, unacked", "peak", "lost_unacked", 2},
		{"loss rate", "peak", "loss_rate", 2.0 / 4800},
		{"recv rate over the stage's 6s", "peak", "recv_rate", 4799.0 / 6},
		{"p99", "peak", "latency.p99", 7003 * time.Microsecond}, // the histogram's bucket
		{"a jump sends nothing", "1", "sent", 0},
		{"a jump has no rate", "1", "send_rate", nil},
		{"nor connections", "base", "connect.failed", nil},
		{"nor acks", "base", "acked", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.Measured.Stages[tt.stage][metric.Name(tt.metric)]
			if tt.want == nil {
				if ok {
					t.Errorf("stages.%s.%s = %v, want absent", tt.stage, tt.metric, got)
				}
				return
			}
			if !ok || got != tt.want {
				t.Errorf("stages.%s.%s = %v (present %v), want %v", tt.stage, tt.metric, got, ok, tt.want)
			}
		})
	}
	// The thresholds read the stages by name and by index.
	var verdicts []bool
	for _, th := range r.Thresholds[:3] {
		verdicts = append(verdicts, th.Pass)
	}
	if verdicts[0] != true || verdicts[1] != true || verdicts[2] != false {
		t.Errorf("stage thresholds %v, want pass, pass, fail (peak's p99 is 7ms)", verdicts)
	}
}

// TestStagesRoundTrip checks that `mqplan report` shows a staged run's
// stages as the run did: the JSON read back gives the same table,
// Markdown and JSON.
func TestStagesRoundTrip(t *testing.T) {
	r := stagedCase(t)
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer, *Result) error
	}{
		{"table", func(b *bytes.Buffer, r *Result) error { return WriteTable(b, r) }},
		{"markdown", func(b *bytes.Buffer, r *Result) error { return WriteMarkdown(b, r) }},
		{"json", func(b *bytes.Buffer, r *Result) error { return WriteJSON(b, r) }},
		{"html", func(b *bytes.Buffer, r *Result) error { return WriteHTML(b, r) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			var a, b bytes.Buffer
			if err := f.write(&a, r); err != nil {
				t.Fatal(err)
			}
			if err := f.write(&b, back); err != nil {
				t.Fatal(err)
			}
			if a.String() != b.String() {
				t.Errorf("read back, the %s differs:\n%s\n---\n%s", f.name, a.String(), b.String())
			}
			if !strings.Contains(a.String(), "peak") {
				t.Errorf("the %s does not show the stages", f.name)
			}
		})
	}
}
