package findmax

import (
	"context"
	"strings"
	"testing"
	"time"
)

// starving is a fake system passing up to max whose generator is starved
// at values of starvedAt or more: in the first starvedRuns runs of such a
// value (every run when starvedRuns is 0), the trial fails its latency
// with mqplan short of CPU.
type starving struct {
	max, starvedAt float64
	starvedRuns    int
	runs           map[float64]int
}

func (s *starving) trial(_ context.Context, t Trial) (Outcome, float64) {
	out := Outcome{Elapsed: 10 * time.Second, Pass: t.Value <= s.max}
	s.runs[t.Value]++
	if t.Value >= s.starvedAt && (s.starvedRuns == 0 || s.runs[t.Value] <= s.starvedRuns) {
		out.Pass, out.Starved = false, "mqplan waited 4s for a CPU in 10s of steady"
	}
	return out, t.Value
}

// TestSearchStarvedGenerator: a trial whose generator was starved is run
// again, never counted as the broker's limit; when it stays starved the
// search stops, bounded by the generator.
func TestSearchStarvedGenerator(t *testing.T) {
	cases := []struct {
		name      string
		sys       starving
		status    Status
		answer    float64
		bound     bool
		starvedAt []int // trial numbers noted as starved
		reason    string
	}{
		{name: "starved once, then judged", sys: starving{max: 730, starvedAt: 400, starvedRuns: 1}, status: Confirmed, answer: 725},
		{name: "starved twice, then judged", sys: starving{max: 730, starvedAt: 800, starvedRuns: 2}, status: Confirmed, answer: 725},
		{name: "always starved: bounded by the generator", sys: starving{max: 10000, starvedAt: 400}, status: Incomplete, bound: true,
			reason: "trial 5 at 400: mqplan itself was short of CPU in 3 runs in a row (mqplan waited 4s for a CPU in 10s of steady): the answer is bounded by the generator, not the broker"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sys := tc.sys
			sys.runs = map[float64]int{}
			r, err := Search(context.Background(), base(), sys.trial)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.status || r.GeneratorBound != tc.bound {
				t.Fatalf("status %v bound %v (%s), want %v %v", r.Status, r.GeneratorBound, r.Reason, tc.status, tc.bound)
			}
			if tc.status == Confirmed && r.Answer != tc.answer {
				t.Errorf("answer %v, want %v", r.Answer, tc.answer)
			}
			if !strings.HasPrefix(r.Reason, tc.reason) {
				t.Errorf("reason %q, want it to start %q", r.Reason, tc.reason)
			}
			if r.Unstable {
				t.Errorf("a starved trial made the search unstable")
			}
			for _, s := range r.Steps {
				if s.Starved != "" && !strings.HasPrefix(s.Note, "not a capacity signal: mqplan itself was short of CPU") {
					t.Errorf("trial %d: note %q", s.N, s.Note)
				}
				if s.Starved != "" && s.Value == r.FirstFail && r.HasFail && s.Value <= sys.max {
					t.Errorf("trial %d: a starved trial was counted as the limit", s.N)
				}
			}
		})
	}
}
