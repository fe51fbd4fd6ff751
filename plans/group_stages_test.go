package plans

import (
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
)

// TestGroupStages checks publish.stages: each group follows the one
// timeline at its own targets, with the plan's stages: (overriding them
// for that group) or without (the groups' lists are the timeline). Every
// stage's messages are counted from each group's own rates, exactly: a
// group's share of a flat stage is its rate × the stage's length, and the
// stages add up to the steady phase.
func TestGroupStages(t *testing.T) {
	const head = `
groups:
  - name: sub
    subscribe: {topic: "t/#"}
  - name: slow
    count: 2
    publish:
      topic: t/slow/%i
`
	tests := []struct {
		name string
		plan string
		// want is each stage's messages per publishing group.
		want  [][]int64
		total time.Duration
	}{
		{
			name: "the groups' lists are the timeline",
			plan: head + `      stages: [{name: base, duration: 0s, rate: 10/s}, {name: hold, duration: 2s, rate: 10/s}, {name: peak, duration: 0s, rate: 40/s}, {name: top, duration: 1s, rate: 40/s}]
  - name: fast
    count: 4
    publish:
      topic: t/fast/%i
      stages: [{name: base, duration: 0s, rate: 100/s}, {name: hold, duration: 2s, rate: 100/s}, {name: peak, duration: 0s, rate: 20/s}, {name: top, duration: 1s, every: 100ms}]
`,
			want:  [][]int64{{0, 0}, {20, 200}, {0, 0}, {40, 30}}, // fast ramps 20→40 over top
			total: 3 * time.Second,
		},
		{
			name: "one group overrides the plan's stages",
			plan: head + `      stages: [{name: base, duration: 0s, rate: 50/s}, {name: hold, duration: 2s, rate: 50/s}]
  - name: fast
    count: 4
    publish: {topic: t/fast/%i}
stages: [{name: base, duration: 0s, rate: 100/s}, {name: hold, duration: 2s, rate: 100/s}]
`,
			want:  [][]int64{{0, 0}, {100, 200}},
			total: 2 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadBytes("group-stages.yaml", []byte(tt.plan), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Duration != tt.total || len(p.Stages) != len(tt.want) {
				t.Fatalf("duration %v with %d stages, want %v with %d", p.Duration, len(p.Stages), tt.total, len(tt.want))
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for i, st := range prog.Stages {
				byGroup := make([]int64, 2)
				for ci := range prog.Clients {
					c := &prog.Clients[ci]
					if c.Publish != nil {
						byGroup[c.Group-1] += int64(prog.Sends(c, st.Start, st.Start+st.Duration))
					}
				}
				if byGroup[0] != tt.want[i][0] || byGroup[1] != tt.want[i][1] {
					t.Errorf("stage %s: slow %d, fast %d messages; want %v", st.Name, byGroup[0], byGroup[1], tt.want[i])
				}
				if st.Messages != byGroup[0]+byGroup[1] {
					t.Errorf("stage %s counts %d messages, its groups %d", st.Name, st.Messages, byGroup[0]+byGroup[1])
				}
				sum += st.Messages
			}
			if steady := prog.Phases[phase.Steady].Messages; steady != sum {
				t.Errorf("steady plans %d messages, the stages %d", steady, sum)
			}
		})
	}
}

// TestGroupStagesDiffer checks that a group's stages that do not match the
// plan's stages: are refused at the first stage that differs.
func TestGroupStagesDiffer(t *testing.T) {
	const plan = `
groups:
  - name: sub
    subscribe: {topic: "t/#"}
  - name: pub
    publish:
      topic: t/%i
      stages: [{name: base, duration: 1s, rate: 5/s}, {name: peak, duration: 3s, rate: 5/s}]
stages: [{name: base, duration: 1s, rate: 10/s}, {name: peak, duration: 2s, rate: 20/s}]
`
	_, err := LoadBytes("differ.yaml", []byte(plan), LoadOptions{})
	want := `differ.yaml:8:55: groups[1].publish.stages[1]: stage 1 is "peak" for 3s here, "peak" for 2s in stages: every stage list of a plan has the same names and durations (one timeline, so that stages.<name> is one window); only the rates differ`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
