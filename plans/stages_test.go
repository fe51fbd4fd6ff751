package plans

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
)

// tooManyStages is a --set value for stages: one more than maxStages.
func tooManyStages() string {
	items := make([]string, maxStages+1)
	for i := range items {
		items[i] = "{duration: 1s, rate: 1/s}"
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// walkStages is the oracle for StagePlan.Messages: every message of every
// publishing client, walked with At and attributed to its stage by
// SegmentOf and the segment's label (warmup is stage -1, left out).
func walkStages(t *testing.T, prog *Program) []int64 {
	t.Helper()
	out := make([]int64, len(prog.Plan.Stages))
	for i := range prog.Clients {
		pub := prog.Clients[i].Publish
		if pub == nil {
			continue
		}
		segs := pub.Schedule.Profile.Segments()
		for k := 0; ; k++ {
			seg, ok := pub.Schedule.SegmentOf(k)
			if !ok {
				break
			}
			if st := segs[seg].Stage; st >= 0 {
				out[st]++
			}
		}
	}
	return out
}

func TestStagesCompile(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		// approx is each stage's messages as the rates give them (both
		// groups); the exact count may differ by the staggering of the
		// clients, at most one message per client and stage.
		approx []float64
		steady time.Duration
	}{
		{
			// pub (4 clients) and devices (3): rates are per group, so
			// both groups send the same but for the per-client stage.
			name:   "shipped shape",
			approx: []float64{2 * 200, 2 * 200, 0, 2 * 1000, 350 + 325, 50 + 37.5},
			steady: 6500 * time.Millisecond,
		},
		{
			name:   "no warmup: the first stage ramps from 0",
			sets:   []string{"warmup=0s"},
			approx: []float64{2 * 100, 2 * 200, 0, 2 * 1000, 350 + 325, 50 + 37.5},
			steady: 6500 * time.Millisecond,
		},
		{
			name:   "counts cap the stages",
			sets:   []string{"warmup=0s", "groups.pub.publish.count=10", "groups.devices.publish.count=10"},
			approx: []float64{70, 0, 0, 0, 0, 0},
			steady: 6500 * time.Millisecond,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(filepath.Join(validDir, "stages.yaml"), LoadOptions{Sets: tc.sets})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if prog.Ramp != 0 || prog.Steady != tc.steady || p.Duration != tc.steady {
				t.Errorf("ramp %v steady %v duration %v, want 0, %v, %v", prog.Ramp, prog.Steady, p.Duration, tc.steady, tc.steady)
			}
			if len(prog.Stages) != len(tc.approx) {
				t.Fatalf("%d stages compiled, want %d", len(prog.Stages), len(tc.approx))
			}
			walked := walkStages(t, prog)
			var sum, deliveries int64
			start := prog.Warmup
			for i, st := range prog.Stages {
				if st.Messages != walked[i] {
					t.Errorf("stage %d (%s): %d messages, the walk over At finds %d", i, st.Name, st.Messages, walked[i])
				}
				if d := float64(st.Messages) - tc.approx[i]; d < -7 || d > 7 {
					t.Errorf("stage %d (%s): %d messages, the rates give about %g", i, st.Name, st.Messages, tc.approx[i])
				}
				// Every message is delivered once, to sub.
				if st.Deliveries != st.Messages {
					t.Errorf("stage %d: %d deliveries for %d messages", i, st.Deliveries, st.Messages)
				}
				if st.Start != start {
					t.Errorf("stage %d starts at %v, want %v", i, st.Start, start)
				}
				start += st.Duration
				sum += st.Messages
				deliveries += st.Deliveries
			}
			// The stages are the steady phase, exactly.
			if ph := prog.Phases[phase.Steady]; ph.Messages != sum || ph.Deliveries != deliveries {
				t.Errorf("steady plans %d messages, %d deliveries; the stages %d, %d", ph.Messages, ph.Deliveries, sum, deliveries)
			}
		})
	}
}

// TestStageProfile checks the segments one group's stages compile to: a
// warmup at the first target, then each stage from the previous target,
// as fractions of the group's peak per-client rate.
func TestStageProfile(t *testing.T) {
	stages := []Stage{
		{Duration: 2 * time.Second, Rate: 100},
		{Duration: time.Second, Rate: 400},
		{Duration: 0, Every: 10 * time.Millisecond}, // 100/s per client, 400/s for 4
		{Duration: time.Second, Rate: 0},
	}
	tests := []struct {
		name     string
		warmup   time.Duration
		interval time.Duration
		want     []Segment
	}{
		{
			name: "no warmup", interval: 10 * time.Millisecond,
			want: []Segment{
				{Duration: 2 * time.Second, From: 0, To: 0.25, Stage: 0},
				{Duration: time.Second, From: 0.25, To: 1, Stage: 1},
				{Duration: 0, From: 1, To: 1, Stage: 2},
				{Duration: time.Second, From: 1, To: 0, Stage: 3},
			},
		},
		{
			name: "warmup at the first target", warmup: 500 * time.Millisecond, interval: 10 * time.Millisecond,
			want: []Segment{
				{Duration: 500 * time.Millisecond, From: 0.25, To: 0.25, Stage: -1},
				{Duration: 2 * time.Second, From: 0.25, To: 0.25, Stage: 0},
				{Duration: time.Second, From: 0.25, To: 1, Stage: 1},
				{Duration: 0, From: 1, To: 1, Stage: 2},
				{Duration: time.Second, From: 1, To: 0, Stage: 3},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prof, iv, err := stageProfile(stages, tc.warmup, 4)
			if err != nil {
				t.Fatal(err)
			}
			if iv != tc.interval {
				t.Errorf("interval %v, want %v", iv, tc.interval)
			}
			got := prof.Segments()
			if len(got) != len(tc.want) {
				t.Fatalf("segments %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("segment %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestStageWorkLimit checks that a plan built in Go (not loaded) with more
// stages × publishing clients than maxStageWork is refused by Compile.
func TestStageWorkLimit(t *testing.T) {
	p, err := Load(filepath.Join(validDir, "stages.yaml"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for len(p.Stages) < 200 {
		p.Stages = append(p.Stages, Stage{Duration: time.Second, Rate: 1})
	}
	p.Groups[1].Count = maxStageWork/200 + 1
	_, err = Compile(p, CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), "more than the limit of 8,000,000") {
		t.Fatalf("Compile = %v, want the stage work limit", err)
	}
}

// TestStagesWithChurn checks that the stages count a churning group's
// sends as the phases do (its offline windows send nothing), so that the
// stages still add up to the steady phase exactly.
func TestStagesWithChurn(t *testing.T) {
	const plan = `
groups:
  - name: ingest
    subscribe: {topic: "t/#", qos: 1}
  - name: sensors
    count: 20
    lifetime: 4s
    away: 500ms
    publish: {topic: "t/%i", qos: 1, arrival: poisson}
  - name: backend
    count: 5
    publish: {topic: "t/b/%i"}
warmup: 1s
stages: [{name: a, duration: 3s, rate: 40/s}, {name: b, duration: 2s, rate: 100/s}]
`
	p, err := LoadBytes("churn-stages.yaml", []byte(plan), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sum, deliveries, plain int64
	for _, st := range prog.Stages {
		sum += st.Messages
		deliveries += st.Deliveries
	}
	for i := range prog.Clients {
		if pub := prog.Clients[i].Publish; pub != nil {
			plain += int64(pub.Schedule.Messages(prog.Warmup, prog.Warmup+prog.Steady))
		}
	}
	if ph := prog.Phases[phase.Steady]; ph.Messages != sum || ph.Deliveries != deliveries {
		t.Errorf("steady plans %d messages, %d deliveries; the stages %d, %d", ph.Messages, ph.Deliveries, sum, deliveries)
	}
	if sum >= plain {
		t.Errorf("the stages count %d messages, the schedules without the offline windows %d: churn left nothing out", sum, plain)
	}
}
