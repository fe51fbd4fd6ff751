package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/findmax"
	"github.com/mqplan/mqplan/internal/outfile"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/runner"
)

// find-max's defaults: a trial long enough for a p99 of thousands of
// samples at modest rates, a confirmation six times as long, ten
// doublings of headroom each way, and a budget that an unattended CI job
// can afford.
const (
	defTrialDuration   = 10 * time.Second
	defConfirmDuration = time.Minute
	defMaxTrials       = 20
	defBudget          = 30 * time.Minute
	defSettle          = 2 * time.Second
	defPrecision       = 0.05
	defFactor          = 2.0
	// defRange is how far --min and --max default from --from.
	defRange = 1024
	// confirmations bounds the confirmation runs: the answer, then two
	// steps down of confirmStepDown each when a confirmation fails.
	confirmations   = 3
	confirmStepDown = 0.10
	// maxFindMaxPlanBytes bounds the plan read once for every trial,
	// as plans.Load bounds a plan file.
	maxFindMaxPlanBytes = 4 << 20
)

// fraction is a flag holding a fraction, written 5% or 0.05.
type fraction struct{ v float64 }

func (f *fraction) String() string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(f.v*100, 'f', -1, 64) + "%"
}

func (f *fraction) Set(s string) error {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return fmt.Errorf("want a percentage like 5%% or a fraction like 0.05, got %q", s)
	}
	if pct {
		v /= 100
	}
	if !(v > 0 && v < 1) {
		return fmt.Errorf("want more than 0%% and less than 100%%, got %q", s)
	}
	f.v = v
	return nil
}

// findMaxFormats are find-max's --out formats.
var findMaxFormats = map[string]func(io.Writer, *report.FindMax) error{
	"json":  report.WriteFindMaxJSON,
	"table": report.WriteFindMaxTable,
	"html":  report.WriteFindMaxHTML,
}

// findMaxOutputs is find-max's repeatable --out FORMAT=FILE.
type findMaxOutputs struct{ list []output }

func (o *findMaxOutputs) String() string { return "" }

func (o *findMaxOutputs) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want FORMAT=FILE (FORMAT one of json, table, html; FILE - for standard output), got %q", v)
	}
	if findMaxFormats[name] == nil {
		return fmt.Errorf("unknown format %q: find-max writes json, table or html", name)
	}
	o.list = append(o.list, output{format: report.Format{Name: name}, path: path, flag: "--out " + v})
	return nil
}

func (o *findMaxOutputs) write(e *env, f *report.FindMax) error {
	var first error
	for _, out := range o.list {
		var b bytes.Buffer
		err := findMaxFormats[out.format.Name](&b, f)
		switch {
		case err != nil:
		case outfile.IsStdout(out.path):
			_, err = e.stdout.Write(b.Bytes())
		default:
			err = outfile.WriteFile(out.path, b.Bytes())
		}
		if err != nil && first == nil {
			first = fmt.Errorf("%s: %w", out.flag, err)
		}
	}
	return first
}

func cmdFindMax(e *env, args []string) error {
	fs := newFlags(e, "find-max", "[flags] PLAN", `Searches one knob of the plan for the highest value at which all its thresholds hold.
From --from (default the plan's own value) it steps up ×--factor until a trial
fails (or down until one passes), bisects to --precision, and confirms the
answer with a --confirm-duration run, stepping down 10% (at most twice) when
that fails. Each trial is a real run of the plan with duration set to
--trial-duration (warmup, ramp and drain as the plan says), on fresh
connections with a fresh run id: on the embedded broker a fresh broker per
trial; on another broker, after --settle.
Exits 0 (an answer confirmed), 1 (no value passes, even the lowest),
2 (invalid plan, knob or flags) or 3 (the search could not complete: budget,
--max-trials, Ctrl-C, a trial that could not complete, a trial whose run was
not healthy (the broker crashed, stalled, or refused or dropped connections:
not a capacity limit), no confirmation held; the best bracket found so far is
reported). Thresholds bounding a rate or count by a fixed number are warned
of before the first trial: they do not scale with the knob.`)
	var pf planFlags
	pf.register(fs)
	knobFlag := fs.String("knob", "", "the value searched: groups.NAME.rate (the group's total msg/s) or groups.NAME.count (its clients); default the rate of the first publishing group")
	from := fs.Float64("from", 0, "the first value tried (default the plan's own)")
	minV := fs.Float64("min", 0, fmt.Sprintf("the lowest value tried (default --from/%d, at least 1 client)", defRange))
	maxV := fs.Float64("max", 0, fmt.Sprintf("the highest value tried (default --from×%d)", defRange))
	factor := fs.Float64("factor", defFactor, "the bracketing step: ×factor up until a trial fails")
	prec := fraction{defPrecision}
	fs.Var(&prec, "precision", "stop bisecting when the bracket is this narrow, relative to its low end (e.g. 5% or 0.05)")
	trialDur := fs.Duration("trial-duration", defTrialDuration, "the measured (steady) length of each trial")
	confirmDur := fs.Duration("confirm-duration", defConfirmDuration, "the measured length of the confirmation run")
	maxTrials := fs.Int("max-trials", defMaxTrials, "the most trials run, confirmations included")
	budget := fs.Duration("budget", defBudget, "the most wall time the trials may take (a trial starts only if its planned length, and a confirmation's, still fit)")
	settle := fs.Duration("settle", defSettle, "on a broker other than the embedded one, the pause before each trial, for the broker to finish the previous trial's backlog")
	var outs findMaxOutputs
	fs.Var(&outs, "out", "write the search as FORMAT to FILE (- for standard output); repeatable. Formats: json, table, html")
	var labelled outputs
	fs.Var(labelFlag{&labelled}, "label", "name this search among others (the broker a CI matrix job tests, e.g. emqx-5.8): shown after the plan's name in every output, and the JSON's label")
	quiet := fs.Bool("quiet", false, "no line per trial on stderr")
	procs := fs.Int("procs", 0, "CPUs mqplan may use (default: all, or half when the broker is another process on this machine)")
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	path, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *trialDur <= 0 || *confirmDur <= 0:
		return invalid(errors.New("--trial-duration and --confirm-duration must be more than 0"))
	case *settle < 0 || *procs < 0:
		return invalid(errors.New("--settle and --procs must not be negative"))
	case *budget < 0:
		return invalid(errors.New("--budget must not be negative (0 means no budget)"))
	}
	if err := (&outputs{list: outs.list}).check(input{path, "the plan"}); err != nil {
		return err
	}
	data, err := readPlanOnce(e, path)
	if err != nil {
		return invalid(err)
	}
	for _, s := range pf.sets {
		// Each trial's duration is find-max's: a --set duration would be
		// overridden without a word.
		if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == "duration" {
			return invalid(fmt.Errorf("--set %s: find-max sets each trial's duration; use --trial-duration and --confirm-duration", strings.TrimSpace(s)))
		}
	}
	opts, err := pf.options(e)
	if err != nil {
		return err
	}
	sets := opts.Sets
	plan, err := plans.LoadBytes(path, data, opts)
	if err != nil {
		return invalid(err)
	}
	knob, err := plans.ParseKnob(*knobFlag, plan)
	if err != nil {
		return invalid(fmt.Errorf("--knob %w", err))
	}
	cfg := findmax.Config{From: knob.Value(plan), Factor: *factor, Precision: prec.v, MaxTrials: *maxTrials, Budget: *budget,
		Integer: knob.Count, Confirmations: confirmations, StepDown: confirmStepDown}
	if set["from"] {
		cfg.From = *from
	}
	cfg.Min, cfg.Max = cfg.From/defRange, cfg.From*defRange
	if knob.Count {
		cfg.Min = math.Max(1, math.Floor(cfg.Min))
	}
	if set["min"] {
		cfg.Min = *minV
	}
	if set["max"] {
		cfg.Max = *maxV
	}
	if err := cfg.Check(); err != nil {
		return invalid(err)
	}
	// The plan at the ends of the range and at the start, for a trial
	// and a confirmation, is checked before anything connects: a value
	// beyond the plan's limits must not stop the search halfway.
	compile := func(v float64, d time.Duration, runID string) (*plans.Program, error) {
		trialSets := append(append(append([]string(nil), sets...), knob.Sets(plan, v)...), "duration="+d.String())
		trialOpts := opts
		trialOpts.Sets = trialSets
		p, err := plans.LoadBytes(path, data, trialOpts)
		if err != nil {
			return nil, err
		}
		return plans.Compile(p, plans.CompileOptions{RunID: runID})
	}
	check := func(what string, v float64, d time.Duration) (*plans.Program, error) {
		prog, err := compile(v, d, "<run>")
		if err != nil {
			return nil, invalid(fmt.Errorf("%s %s: the plan with %s = %s is invalid:\n%w", what, findmax.Format(v), knob, findmax.Format(v), err))
		}
		return prog, nil
	}
	if _, err := check("--min", cfg.Min, *trialDur); err != nil {
		return err
	}
	if _, err := check("--max", cfg.Max, *trialDur); err != nil {
		return err
	}
	trialProg, err := check("--from", cfg.From, *trialDur)
	if err != nil {
		return err
	}
	confirmProg, err := check("--from", cfg.From, *confirmDur)
	if err != nil {
		return err
	}
	external := !plan.Broker.IsEmbedded()
	pause := time.Duration(0)
	if external {
		pause = *settle
	}
	cfg.TrialCost = plannedLength(trialProg) + pause
	cfg.ConfirmCost = plannedLength(confirmProg) + pause
	e.chooseProcs(*procs, plan.Broker)
	// Thresholds with fixed bounds on what grows with the knob decide the
	// knee themselves: said before the first trial, --quiet or not, and
	// in every output.
	var warnings []string
	for _, f := range knob.FixedBounds(plan, trialProg.Thresholds) {
		w := report.FixedBoundWarning(f, knob.String())
		warnings = append(warnings, w)
		fmt.Fprintf(e.stderr, "mqplan: warning: %s\n", report.TerminalSafe(w, "\t"))
	}

	if !*quiet {
		// What the search will do, before the first trial: the
		// schedule of a search is the user's to check, as explain's is.
		fmt.Fprintf(e.stderr, "mqplan: searching %s from %s %s (×%g up to %s, ÷%g down to %s, bisecting to %s), trials of about %s, a confirmation of about %s, at most %d trials",
			knob, findmax.Format(cfg.From), knob.Unit(), cfg.Factor, findmax.Format(cfg.Max), cfg.Factor, findmax.Format(cfg.Min),
			prec.String(), cfg.TrialCost.Round(time.Second), cfg.ConfirmCost.Round(time.Second), cfg.MaxTrials)
		if cfg.Budget > 0 {
			fmt.Fprintf(e.stderr, " within %s", cfg.Budget)
		}
		fmt.Fprintln(e.stderr)
	}
	ctx, stopSigs := onSignals(e, "interrupted: stopping the search and reporting the best bracket so far", nil)
	defer stopSigs()
	out := &report.FindMax{Plan: plan.Name, File: path, BrokerURL: strings.Join(plan.Broker.URLs, ","), MqplanVersion: resultVersion(), Label: labelled.label, Knob: knob.String(), Unit: knob.Unit(),
		From: cfg.From, Max: cfg.Max, Precision: cfg.Precision, TrialDuration: *trialDur, ConfirmDuration: *confirmDur, Started: time.Now(),
		Warnings: warnings}
	group := plan.Groups[knob.Index].Name
	trial := func(ctx context.Context, t findmax.Trial) (findmax.Outcome, report.FindMaxTrial) {
		start := time.Now()
		d := *trialDur
		if t.Confirm {
			d = *confirmDur
		}
		if !*quiet {
			what := "trial"
			if t.Confirm {
				what = "confirmation"
			}
			fmt.Fprintf(e.stderr, "mqplan: %s %d: %s = %s %s for %s ...", what, t.N, knob, findmax.Format(t.Value), knob.Unit(), d)
		}
		if external && t.N > 1 && pause > 0 {
			timer := time.NewTimer(pause)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		}
		fail := func(o findmax.Outcome, err error) (findmax.Outcome, report.FindMaxTrial) {
			o.Elapsed = time.Since(start)
			if !*quiet {
				fmt.Fprintf(e.stderr, " %v\n", errText(err))
			}
			return o, report.FindMaxTrial{N: t.N, Value: t.Value, Confirm: t.Confirm, Verdict: report.VerdictIncomplete,
				Failed: []string{err.Error()}, Elapsed: o.Elapsed}
		}
		if ctx.Err() != nil {
			return fail(findmax.Outcome{Interrupted: true}, errors.New("interrupted"))
		}
		prog, err := compile(t.Value, d, newRunID())
		if err != nil {
			return fail(findmax.Outcome{Err: err}, err)
		}
		st, err := runner.Run(ctx, prog, trialOptions(prog))
		if err != nil {
			if ctx.Err() != nil {
				return fail(findmax.Outcome{Interrupted: true}, err)
			}
			return fail(findmax.Outcome{Err: err}, err)
		}
		res := report.Evaluate(prog.Plan, prog.Thresholds, st)
		o := findmax.Outcome{Pass: res.Complete() && res.Passed(), Interrupted: res.Interrupted, Elapsed: time.Since(start)}
		if !res.Complete() && !res.Interrupted {
			o.Err = errors.New(res.Incomplete)
		}
		if res.Verdict() == report.VerdictInconclusive && res.Disturbance != nil {
			// Its latency failed as mqplan's own lack of CPU explains:
			// not the broker's limit (findmax runs it again).
			o.Starved = res.Disturbance.Evidence()
		}
		ft := report.FindMaxTrialOf(t.N, t.Value, t.Confirm, res, group, o.Elapsed)
		if len(ft.Unhealthy) > 0 {
			// A broker that crashed, stalled or shed connections
			// failed the thresholds for a reason the load did not
			// cause: the search must not read it as the knee.
			o.Pass, o.Unhealthy = false, strings.Join(ft.Unhealthy, "; ")
		}
		if !*quiet {
			fmt.Fprintf(e.stderr, " %s", ft.Verdict)
			if len(ft.Unhealthy) > 0 {
				fmt.Fprintf(e.stderr, " (%s)", errText(errors.New(o.Unhealthy)))
			}
			if ft.SendRate != nil {
				fmt.Fprintf(e.stderr, " (sent %.1f/s)", *ft.SendRate)
			}
			if len(ft.Failed) > 0 {
				fmt.Fprintf(e.stderr, ": %s", errText(errors.New(strings.Join(ft.Failed, "; "))))
			}
			fmt.Fprintln(e.stderr)
		}
		return o, ft
	}
	r, err := findmax.Search(ctx, cfg, trial)
	if err != nil {
		return invalid(err)
	}
	out.Elapsed = time.Since(out.Started)
	for _, s := range r.Steps {
		s.Data.Note = s.Note
		out.Trials = append(out.Trials, s.Data)
	}
	out.Unstable = r.Unstable
	if r.HasConfirmFail {
		out.ConfirmFailed = &r.ConfirmFailed
	}
	if r.HasPass {
		out.LastPass = &r.LastPass
	}
	if r.HasFail {
		out.FirstFail = &r.FirstFail
	}
	out.Reason, out.AtMax = r.Reason, r.AtMax
	switch r.Status {
	case findmax.Confirmed:
		out.Status, out.Answer = report.FindMaxConfirmed, &r.Answer
	case findmax.NoPass:
		out.Status = report.FindMaxNoPass
	default:
		out.Status = report.FindMaxIncomplete
	}
	tableOut := e.stdout
	for _, o := range outs.list {
		if outfile.IsStdout(o.path) {
			tableOut = e.stderr
		}
	}
	var b bytes.Buffer
	if err := report.WriteFindMaxTable(&b, out); err != nil {
		return incomplete(err)
	}
	if _, err := tableOut.Write(b.Bytes()); err != nil {
		return incomplete(fmt.Errorf("write report: %w", err))
	}
	if err := outs.write(e, out); err != nil {
		return incomplete(err)
	}
	switch r.Status {
	case findmax.Confirmed:
		return nil
	case findmax.NoPass:
		return &exitError{code: exitFail, err: fmt.Errorf("no value passes: %w", errReported)}
	}
	return errIncomplete
}

// trialOptions are the runner's options for one trial: a fresh embedded
// broker each (runner.Run starts and closes it), so that no trial
// inherits the previous one's backlog, sessions or retained messages;
// starting one costs milliseconds.
func trialOptions(prog *plans.Program) runner.Options { return runOptions(prog) }

// runOptions are the runner's options for a run of prog: the embedded
// broker, started by the runner when the plan names it, refreshes $SYS
// every second (not once a minute) when the plan reads it.
func runOptions(prog *plans.Program) runner.Options {
	opts := runner.Options{Embedded: startEmbedded}
	if m := prog.Plan.Broker.Metrics; m != nil && m.Sys {
		opts.Embedded = func() (runner.EmbeddedBroker, error) {
			b, err := broker.Start(broker.Options{SysInterval: time.Second})
			if err != nil {
				return nil, err
			}
			return b, nil
		}
	}
	return opts
}

// plannedLength is a run's planned wall time: its phases, drain's upper
// bound included.
func plannedLength(prog *plans.Program) time.Duration {
	var d time.Duration
	for _, ph := range prog.Phases {
		d += ph.Length
	}
	return d
}

// readPlanOnce reads the plan's bytes once, so that every trial runs the
// same plan even if the file changes meanwhile (and "-" can be read for
// each).
func readPlanOnce(e *env, path string) ([]byte, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxFindMaxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFindMaxPlanBytes {
		return nil, fmt.Errorf("%s: the plan is larger than the limit of %d MiB: is this the right file?", path, maxFindMaxPlanBytes>>20)
	}
	return data, nil
}
