// Package findmax owns the search of mqplan find-max: given a trial
// function that runs a plan at one value of a knob (a group's rate or
// client count) and says whether the plan's thresholds held, it finds the
// highest value that passes. It steps up from a start value by a factor
// until a trial fails (or down until one passes), bisects the bracket to a
// relative precision, and confirms the answer with a longer trial, stepping
// down when the confirmation fails.
//
// A trial that could not complete, or whose run was not healthy (the
// broker refused or dropped connections, stalled, or its process exited),
// says nothing about capacity: the search stops there and reports the
// bracket the healthy trials found, rather than bisecting downwards into
// a broker that is failing. A trial that contradicts an earlier one (a
// value failing below one that passed, as when a confirmation fails where
// the short trial passed) is noted on the step and marks the knee
// unstable, never silently.
//
// A trial whose generator was short of CPU (Outcome.Starved: mqplan's
// verdict INCONCLUSIVE) is not the broker's limit either: it is run again,
// up to StarvedRetries more times, and when every run of it was starved
// the search stops, saying that the answer is bounded by the generator,
// not the broker (Result.GeneratorBound).
//
// The search is pure: it reads no clock and touches no network. The trial
// function says how long each trial took, and the budget is charged with
// that, so that tests drive every path (bracketing, bisection, budget,
// trial limit, interruption) with a fake trial function.
package findmax

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Config bounds and shapes one search.
type Config struct {
	// From is the first value tried (the plan's own, by default).
	From float64
	// Min and Max bound the values tried: the search never goes below Min
	// (no value passes if Min fails) or above Max (the answer is Max, at
	// least, if Max passes).
	Min, Max float64
	// Integer restricts values to whole numbers (a client count).
	Integer bool
	// Factor is the bracketing step: ×Factor up, ÷Factor down (> 1).
	Factor float64
	// Precision is the relative width at which bisection stops:
	// (firstFail − lastPass) / lastPass <= Precision.
	Precision float64
	// MaxTrials bounds the trials, confirmations included.
	MaxTrials int
	// Budget bounds the summed Elapsed of the trials; 0 means none.
	// A trial is not started unless its estimated cost (TrialCost,
	// ConfirmCost) fits in what is left, with room for a confirmation.
	Budget time.Duration
	// TrialCost and ConfirmCost estimate one short trial and one
	// confirmation, for the budget.
	TrialCost, ConfirmCost time.Duration
	// Confirmations bounds the confirmation runs: the first at the
	// answer, then each lower by StepDown (a fraction) when the previous
	// failed.
	Confirmations int
	StepDown      float64
}

// Check says what is wrong with c, if anything.
func (c Config) Check() error {
	switch {
	case !(c.Min > 0) || math.IsInf(c.Max, 0) || !(c.Max >= c.Min):
		return fmt.Errorf("the range [%g, %g] is empty or not positive", c.Min, c.Max)
	case !(c.From >= c.Min && c.From <= c.Max):
		return fmt.Errorf("the start %g is outside [%g, %g]", c.From, c.Min, c.Max)
	case !(c.Factor > 1) || math.IsInf(c.Factor, 0):
		return fmt.Errorf("the step factor must be more than 1, got %g", c.Factor)
	case !(c.Precision > 0 && c.Precision < 1):
		return fmt.Errorf("the precision must be between 0 and 100%%, got %g", c.Precision)
	case c.MaxTrials < 2:
		return fmt.Errorf("at least 2 trials are needed (one trial and its confirmation), got %d", c.MaxTrials)
	case c.Budget < 0:
		return fmt.Errorf("the budget must not be negative, got %v", c.Budget)
	case c.Confirmations < 1:
		return fmt.Errorf("at least one confirmation is needed, got %d", c.Confirmations)
	case !(c.StepDown > 0 && c.StepDown < 1):
		return fmt.Errorf("the step down must be between 0 and 100%%, got %g", c.StepDown)
	}
	return nil
}

// Trial is one run the search asks for.
type Trial struct {
	// N numbers the trials from 1.
	N     int
	Value float64
	// Confirm marks a confirmation run (the longer one).
	Confirm bool
}

// Outcome is what a trial function reports.
type Outcome struct {
	// Pass: the run completed and every threshold held.
	Pass bool
	// Interrupted: the run was stopped (Ctrl-C); the search stops with
	// it, and this trial judges nothing.
	Interrupted bool
	// Err, when set, is why the run could not complete; the search stops.
	Err error
	// Unhealthy, when set, is why the run completed but cannot be read
	// as a capacity signal (connections refused or dropped, a stalled
	// broker, a broker process that exited): whether its thresholds held
	// says nothing about the knob, so the search stops without counting
	// it as a pass or a failure.
	Unhealthy string
	// Starved, when set, is the evidence that mqplan itself was short of
	// CPU and that this explains the trial's failures (its verdict was
	// INCONCLUSIVE): the trial is run again, and never counted as the
	// broker's limit.
	Starved string
	// Elapsed is the wall time the trial took, charged to the budget.
	Elapsed time.Duration
}

// Step is one trial with its outcome and what the trial function measured.
type Step[T any] struct {
	Trial
	Outcome
	Data T
	// Note is what the search says of the step beside its verdict: that
	// it contradicts an earlier trial, or that it was not a capacity
	// signal ("" when there is nothing to say).
	Note string
}

// Status is how a search ended.
type Status int

const (
	// Confirmed: an answer passed its confirmation (exit 0).
	Confirmed Status = iota
	// NoPass: even the lowest value tried failed (exit 1).
	NoPass
	// Incomplete: the search stopped first (budget, trials, interrupt,
	// a trial that could not complete or was not healthy, no
	// confirmation held) (exit 3).
	Incomplete
)

func (s Status) String() string {
	switch s {
	case Confirmed:
		return "confirmed"
	case NoPass:
		return "no value passes"
	}
	return "incomplete"
}

// Result is a search's outcome.
type Result[T any] struct {
	Steps  []Step[T]
	Status Status
	// Reason says why the search ended as it did, for Incomplete and NoPass.
	Reason string
	// LastPass and FirstFail are the knee found by the short trials: the
	// highest passing and the lowest failing value (HasPass, HasFail say
	// whether there is one). Confirmations do not move them.
	LastPass, FirstFail float64
	HasPass, HasFail    bool
	// Answer is the value confirmed (Confirmed only).
	Answer float64
	// AtMax: the answer is Max and no trial failed up to it, so the real
	// maximum may be higher.
	AtMax bool
	// Unstable: a trial failed at or below a value that an earlier trial
	// passed (noise, or a load that holds for a short run and not for a
	// longer one); the steps concerned carry a Note.
	Unstable bool
	// ConfirmFailed is the lowest value whose confirmation failed, when
	// HasConfirmFail: a longer run does not hold there, whatever the
	// short trials' knee says.
	ConfirmFailed  float64
	HasConfirmFail bool
	// Unhealthy: the search stopped at a trial whose run was not healthy
	// (Outcome.Unhealthy); Reason says which and why.
	Unhealthy bool
	// GeneratorBound: the search stopped at a trial whose every run found
	// mqplan itself short of CPU (Outcome.Starved): the answer is bounded
	// by the generator, not the broker; Reason has the evidence.
	GeneratorBound bool
}

// StarvedRetries is how many more times a trial whose generator was
// starved is run before the search stops: twice gives a passing
// disturbance (another build on the machine) three chances, and a
// generator at its own limit costs two wasted trials.
const StarvedRetries = 2

// Search runs the search. trial runs one trial; ctx is passed through to
// it (the trial function is what notices cancellation and reports
// Interrupted). Search returns an error only for an invalid Config.
func Search[T any](ctx context.Context, c Config, trial func(context.Context, Trial) (Outcome, T)) (*Result[T], error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	s := &search[T]{c: c, trial: trial, ctx: ctx, r: &Result[T]{}}
	s.run()
	return s.r, nil
}

type search[T any] struct {
	c     Config
	trial func(context.Context, Trial) (Outcome, T)
	ctx   context.Context
	r     *Result[T]
	spent time.Duration
}

// try runs one trial if the limits allow it and another reserve of
// trials and time after it; ok is false when the search must stop (the
// reason is set).
func (s *search[T]) try(v float64, confirm bool, reserveTrials int, reserve time.Duration) (pass bool, ok bool) {
	cost := s.c.TrialCost
	if confirm {
		cost = s.c.ConfirmCost
	}
	var out Outcome
	var step Step[T]
	for attempt := 0; ; attempt++ {
		if len(s.r.Steps)+1+reserveTrials > s.c.MaxTrials {
			s.stop(fmt.Sprintf("--max-trials %d reached", s.c.MaxTrials))
			return false, false
		}
		if s.c.Budget > 0 && s.spent+cost+reserve > s.c.Budget {
			s.stop(fmt.Sprintf("--budget %v would be exceeded (spent %v, the next trial needs about %v)", s.c.Budget, s.spent.Round(time.Second), (cost + reserve).Round(time.Second)))
			return false, false
		}
		t := Trial{N: len(s.r.Steps) + 1, Value: v, Confirm: confirm}
		var data T
		out, data = s.trial(s.ctx, t)
		s.spent += out.Elapsed
		step = Step[T]{Trial: t, Outcome: out, Data: data}
		if out.Starved == "" || out.Interrupted || out.Err != nil || out.Unhealthy != "" {
			break
		}
		if attempt == StarvedRetries {
			step.Note = "not a capacity signal: mqplan itself was short of CPU"
			s.r.Steps = append(s.r.Steps, step)
			s.r.GeneratorBound = true
			s.stop(fmt.Sprintf("trial %d at %s: mqplan itself was short of CPU in %d runs in a row (%s): the answer is bounded by the generator, not the broker; give mqplan more CPUs (--procs) or spread the load over processes (--workers)", t.N, Format(v), attempt+1, out.Starved))
			return false, false
		}
		step.Note = "not a capacity signal: mqplan itself was short of CPU; run again"
		s.r.Steps = append(s.r.Steps, step)
	}
	t := step.Trial
	switch {
	case out.Interrupted:
		s.r.Steps = append(s.r.Steps, step)
		s.stop("interrupted")
		return false, false
	case out.Err != nil:
		s.r.Steps = append(s.r.Steps, step)
		s.stop(fmt.Sprintf("trial %d at %s could not complete: %v", t.N, Format(v), out.Err))
		return false, false
	case out.Unhealthy != "":
		step.Note = "not a capacity signal: the run was not healthy"
		s.r.Steps = append(s.r.Steps, step)
		s.r.Unhealthy = true
		s.stop(fmt.Sprintf("trial %d at %s was not a healthy run (%s): a failing broker is not a capacity limit, so the search stopped there", t.N, Format(v), out.Unhealthy))
		return false, false
	}
	step.Note = s.contradiction(step.Trial, out.Pass)
	s.r.Steps = append(s.r.Steps, step)
	if confirm && !out.Pass && (!s.r.HasConfirmFail || v < s.r.ConfirmFailed) {
		s.r.ConfirmFailed, s.r.HasConfirmFail = v, true
	}
	return out.Pass, true
}

// contradiction says which earlier judged trial the outcome of t
// contradicts, if any: a failure at or below a value that passed, or a
// pass at or above a value that failed, among trials of the same length
// or (for a failed confirmation) any passing trial. It marks the search
// unstable when there is one.
func (s *search[T]) contradiction(t Trial, pass bool) string {
	for i := len(s.r.Steps) - 1; i >= 0; i-- {
		p := s.r.Steps[i]
		if p.Interrupted || p.Err != nil || p.Unhealthy != "" || p.Starved != "" {
			continue
		}
		switch {
		case !pass && p.Pass && p.Value >= t.Value && (p.Confirm == t.Confirm || t.Confirm):
			s.r.Unstable = true
			what := "trial"
			if p.Confirm {
				what = "confirmation"
			}
			return fmt.Sprintf("unstable: %s %d passed at %s", what, p.N, Format(p.Value))
		case pass && !p.Pass && p.Value <= t.Value && p.Confirm == t.Confirm:
			s.r.Unstable = true
			return fmt.Sprintf("unstable: trial %d failed at %s", p.N, Format(p.Value))
		}
	}
	return ""
}

func (s *search[T]) stop(reason string) {
	s.r.Status, s.r.Reason = Incomplete, reason
}

func (s *search[T]) pass(v float64) {
	if !s.r.HasPass || v > s.r.LastPass {
		s.r.LastPass, s.r.HasPass = v, true
	}
}

func (s *search[T]) fail(v float64) {
	if !s.r.HasFail || v < s.r.FirstFail {
		s.r.FirstFail, s.r.HasFail = v, true
	}
}

func (s *search[T]) run() {
	c := s.c
	// Room kept for the confirmation while searching.
	keepTrials, keepTime := 1, c.ConfirmCost
	v := s.round(c.From)
	// Bracketing.
	for {
		pass, ok := s.try(v, false, keepTrials, keepTime)
		if !ok {
			return
		}
		if pass {
			s.pass(v)
			if s.r.HasFail {
				break
			}
			if v >= c.Max {
				s.r.AtMax = true
				break
			}
			v = s.up(v)
			continue
		}
		s.fail(v)
		if s.r.HasPass {
			break
		}
		if v <= c.Min {
			s.r.Status, s.r.Reason = NoPass, fmt.Sprintf("even the lowest value tried, %s, failed", Format(v))
			return
		}
		v = s.down(v)
	}
	// Bisection.
	for s.r.HasFail && !s.narrow(s.r.LastPass, s.r.FirstFail) {
		mid := s.mid(s.r.LastPass, s.r.FirstFail)
		pass, ok := s.try(mid, false, keepTrials, keepTime)
		if !ok {
			return
		}
		if pass {
			s.pass(mid)
		} else {
			s.fail(mid)
		}
	}
	// Confirmation, stepping down when it fails.
	v = s.r.LastPass
	for i := 0; i < c.Confirmations; i++ {
		pass, ok := s.try(v, true, 0, 0)
		if !ok {
			return
		}
		if pass {
			s.r.Status, s.r.Answer = Confirmed, v
			return
		}
		// The knee stays the short trials' own: a confirmation that
		// fails says the longer run does not hold at v, which the
		// steps show.
		s.r.AtMax = false
		if v <= c.Min {
			s.r.Status, s.r.Reason = NoPass, fmt.Sprintf("the confirmation at the lowest value, %s, failed", Format(v))
			return
		}
		next := s.round(v * (1 - c.StepDown))
		if c.Integer && next >= v {
			next = v - 1
		}
		v = math.Max(next, c.Min)
	}
	s.stop(fmt.Sprintf("no confirmation held in %d attempts", c.Confirmations))
}

func (s *search[T]) round(v float64) float64 {
	if s.c.Integer {
		v = math.Floor(v)
	}
	return math.Min(math.Max(v, s.c.Min), s.c.Max)
}

func (s *search[T]) up(v float64) float64 {
	n := v * s.c.Factor
	if s.c.Integer {
		n = math.Max(math.Ceil(n), v+1)
	}
	return math.Min(n, s.c.Max)
}

func (s *search[T]) down(v float64) float64 {
	n := v / s.c.Factor
	if s.c.Integer {
		n = math.Min(math.Floor(n), v-1)
	}
	return math.Max(n, s.c.Min)
}

// narrow reports whether the bracket is as narrow as asked.
func (s *search[T]) narrow(lo, hi float64) bool {
	if s.c.Integer && hi-lo <= 1 {
		return true
	}
	return (hi-lo)/lo <= s.c.Precision
}

func (s *search[T]) mid(lo, hi float64) float64 {
	m := lo + (hi-lo)/2
	if s.c.Integer {
		m = math.Floor(m)
	}
	return m
}

// Format prints a knob value: whole numbers as such, others with
// four significant digits.
func Format(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.4g", v)
}
