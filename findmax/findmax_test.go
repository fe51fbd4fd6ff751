package findmax

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// base is a search from 100 by ×2 to 5 %, with room for many trials.
func base() Config {
	return Config{From: 100, Min: 1, Max: 1e6, Factor: 2, Precision: 0.05, MaxTrials: 30,
		TrialCost: 10 * time.Second, ConfirmCost: 60 * time.Second, Confirmations: 3, StepDown: 0.1}
}

// limit is a fake system whose short trials pass up to max and whose
// confirmations pass up to confirmMax (max when 0).
type limit struct {
	max, confirmMax float64
	// noise flips the short trial at this value (a noisy boundary).
	noise float64
	// interruptAt interrupts trial n; errAt fails trial n; unhealthyAt
	// makes trial n's run unhealthy (it would have failed its thresholds
	// too: a broker dying mid-trial loses messages).
	interruptAt, errAt, unhealthyAt int
}

func (l limit) trial(_ context.Context, t Trial) (Outcome, float64) {
	out := Outcome{Elapsed: 10 * time.Second}
	if t.Confirm {
		out.Elapsed = 60 * time.Second
	}
	switch t.N {
	case l.interruptAt:
		out.Interrupted = true
		return out, t.Value
	case l.errAt:
		out.Err = errors.New("connection refused")
		return out, t.Value
	case l.unhealthyAt:
		out.Unhealthy = "12 unexpected disconnections"
		return out, t.Value
	}
	m := l.max
	if t.Confirm && l.confirmMax > 0 {
		m = l.confirmMax
	}
	out.Pass = t.Value <= m
	if !t.Confirm && l.noise != 0 && t.Value == l.noise {
		out.Pass = !out.Pass
	}
	return out, t.Value
}

func TestSearch(t *testing.T) {
	tests := []struct {
		name   string
		cfg    func(*Config)
		sys    limit
		status Status
		// answer is checked for Confirmed.
		answer    float64
		reason    string
		atMax     bool
		values    []float64 // the values tried, in order, when given
		maxSteps  int
		knee      [2]float64 // the last pass and first fail, when given
		knowsPass bool
		// unstable, unhealthy: the Result's flags; notes the steps'
		// notes by trial number (every other step has none).
		unstable, unhealthy bool
		notes               map[int]string
		// confirmFailed is the lowest failed confirmation, when given.
		confirmFailed float64
	}{
		{name: "monotone pass then fail", sys: limit{max: 730}, status: Confirmed, answer: 725,
			values: []float64{100, 200, 400, 800, 600, 700, 750, 725, 725}},
		{name: "first trial fails steps down", sys: limit{max: 30}, status: Confirmed, answer: 29.6875,
			values: []float64{100, 50, 25, 37.5, 31.25, 28.125, 29.6875, 30.46875, 29.6875}},
		{name: "nothing passes", sys: limit{max: 0.5}, status: NoPass, reason: "even the lowest value tried, 1, failed"},
		{name: "never fails up to the limit", cfg: func(c *Config) { c.Max = 1000 }, sys: limit{max: 1e9}, status: Confirmed, answer: 1000, atMax: true,
			values: []float64{100, 200, 400, 800, 1000, 1000}},
		{name: "noisy boundary stays within the bracket", sys: limit{max: 730, noise: 600}, status: Confirmed, answer: 575,
			values: []float64{100, 200, 400, 800, 600, 500, 550, 575, 575}},
		{name: "confirmation fails then steps down", sys: limit{max: 730, confirmMax: 640}, status: Confirmed, answer: 587.25, knee: [2]float64{725, 750},
			values: []float64{100, 200, 400, 800, 600, 700, 750, 725, 725, 652.5, 587.25}, unstable: true, confirmFailed: 652.5,
			notes: map[int]string{9: "unstable: trial 8 passed at 725", 10: "unstable: trial 8 passed at 725"}},
		{name: "budget exhausted mid-confirmation", cfg: func(c *Config) { c.Budget = 150 * time.Second }, sys: limit{max: 730, confirmMax: 640}, status: Incomplete,
			reason: "--budget 2m30s would be exceeded", knee: [2]float64{725, 750}, unstable: true, confirmFailed: 725,
			values: []float64{100, 200, 400, 800, 600, 700, 750, 725, 725}, notes: map[int]string{9: "unstable: trial 8 passed at 725"}},
		{name: "interrupted mid-confirmation keeps the bracket", sys: limit{max: 730, interruptAt: 9}, status: Incomplete, reason: "interrupted",
			knee: [2]float64{725, 750}, values: []float64{100, 200, 400, 800, 600, 700, 750, 725, 725}},
		{name: "unhealthy trial stops without judging", sys: limit{max: 730, unhealthyAt: 4}, status: Incomplete, knowsPass: true, unhealthy: true,
			reason: "trial 4 at 800 was not a healthy run (12 unexpected disconnections)", values: []float64{100, 200, 400, 800},
			notes: map[int]string{4: "not a capacity signal: the run was not healthy"}},
		{name: "unhealthy bisection trial keeps the healthy bracket", sys: limit{max: 730, unhealthyAt: 6}, status: Incomplete, unhealthy: true,
			reason: "trial 6 at 700 was not a healthy run", knee: [2]float64{600, 800}, values: []float64{100, 200, 400, 800, 600, 700},
			notes: map[int]string{6: "not a capacity signal: the run was not healthy"}},
		{name: "unhealthy confirmation", sys: limit{max: 730, unhealthyAt: 9}, status: Incomplete, unhealthy: true,
			reason: "trial 9 at 725 was not a healthy run", knee: [2]float64{725, 750}, notes: map[int]string{9: "not a capacity signal: the run was not healthy"}},
		{name: "no confirmation holds", cfg: func(c *Config) { c.Confirmations = 2 }, sys: limit{max: 730, confirmMax: 100}, status: Incomplete,
			reason: "no confirmation held in 2 attempts", unstable: true, confirmFailed: 652.5,
			notes: map[int]string{9: "unstable: trial 8 passed at 725", 10: "unstable: trial 8 passed at 725"}},
		{name: "budget exhausted", cfg: func(c *Config) { c.Budget = 2 * time.Minute }, sys: limit{max: 730}, status: Incomplete,
			reason: "--budget 2m0s would be exceeded", maxSteps: 6},
		{name: "max trials reached", cfg: func(c *Config) { c.MaxTrials = 5 }, sys: limit{max: 730}, status: Incomplete,
			reason: "--max-trials 5 reached", maxSteps: 4},
		{name: "interrupted", sys: limit{max: 730, interruptAt: 4}, status: Incomplete, reason: "interrupted", knowsPass: true},
		{name: "trial error stops", sys: limit{max: 730, errAt: 2}, status: Incomplete, reason: "trial 2 at 200 could not complete: connection refused"},
		{name: "integer knob", cfg: func(c *Config) { c.Integer = true; c.From = 10; c.Precision = 0.01 }, sys: limit{max: 37}, status: Confirmed, answer: 37,
			values: []float64{10, 20, 40, 30, 35, 37, 38, 37}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			if tt.cfg != nil {
				tt.cfg(&c)
			}
			r, err := Search(context.Background(), c, tt.sys.trial)
			if err != nil {
				t.Fatal(err)
			}
			var got []float64
			for _, s := range r.Steps {
				got = append(got, s.Value)
				if s.Data != s.Value {
					t.Errorf("step %d carries %v, want its value %v", s.N, s.Data, s.Value)
				}
			}
			if r.Status != tt.status {
				t.Fatalf("status %v (%s), want %v; trials %v", r.Status, r.Reason, tt.status, got)
			}
			if tt.status == Confirmed && r.Answer != tt.answer {
				t.Errorf("answer %v, want %v; trials %v", r.Answer, tt.answer, got)
			}
			if r.AtMax != tt.atMax {
				t.Errorf("AtMax %v, want %v", r.AtMax, tt.atMax)
			}
			if !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", r.Reason, tt.reason)
			}
			if tt.values != nil && !equal(got, tt.values) {
				t.Errorf("trials %v, want %v", got, tt.values)
			}
			if tt.maxSteps > 0 && len(r.Steps) > tt.maxSteps {
				t.Errorf("%d trials, want at most %d", len(r.Steps), tt.maxSteps)
			}
			if tt.knee != [2]float64{} && (r.LastPass != tt.knee[0] || r.FirstFail != tt.knee[1]) {
				t.Errorf("knee [%v, %v], want %v: confirmations do not move it", r.LastPass, r.FirstFail, tt.knee)
			}
			if r.Unstable != tt.unstable || r.Unhealthy != tt.unhealthy {
				t.Errorf("unstable %v, unhealthy %v; want %v, %v", r.Unstable, r.Unhealthy, tt.unstable, tt.unhealthy)
			}
			for _, s := range r.Steps {
				if s.Note != tt.notes[s.N] {
					t.Errorf("trial %d note %q, want %q", s.N, s.Note, tt.notes[s.N])
				}
			}
			if got := map[bool]float64{true: r.ConfirmFailed}[r.HasConfirmFail]; got != tt.confirmFailed {
				t.Errorf("lowest failed confirmation %v (%v), want %v", r.ConfirmFailed, r.HasConfirmFail, tt.confirmFailed)
			}
			if tt.knowsPass && (!r.HasPass || r.LastPass != 400 || r.HasFail) {
				t.Errorf("bracket so far: pass %v (%v), fail %v (%v); want last pass 400 and no fail", r.LastPass, r.HasPass, r.FirstFail, r.HasFail)
			}
			if c.Budget > 0 {
				var spent time.Duration
				for _, s := range r.Steps {
					spent += s.Elapsed
				}
				if spent > c.Budget {
					t.Errorf("spent %v, over the budget %v", spent, c.Budget)
				}
			}
			// Confirmed answers passed a confirmation, and the knee
			// brackets them within the precision.
			if r.Status == Confirmed {
				last := r.Steps[len(r.Steps)-1]
				if !last.Confirm || !last.Pass || last.Value != r.Answer {
					t.Errorf("last step %+v is not the answer's passing confirmation", last)
				}
				if r.HasFail && !r.AtMax && !c.Integer && (r.FirstFail-r.Answer)/r.Answer > c.Precision && r.Steps[len(r.Steps)-2].Confirm == false {
					t.Errorf("knee [%v, %v] wider than the precision", r.Answer, r.FirstFail)
				}
			}
		})
	}
}

func TestConfigCheck(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"start below min", func(c *Config) { c.From = 0.5 }, "outside"},
		{"factor one", func(c *Config) { c.Factor = 1 }, "factor"},
		{"precision zero", func(c *Config) { c.Precision = 0 }, "precision"},
		{"one trial", func(c *Config) { c.MaxTrials = 1 }, "at least 2 trials"},
		{"empty range", func(c *Config) { c.Max = 0.5 }, "empty"},
		{"negative budget", func(c *Config) { c.Budget = -1 }, "budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.cfg(&c)
			_, err := Search(context.Background(), c, limit{max: 1}.trial)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
