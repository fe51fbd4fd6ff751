package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/mqplan/mqplan/cmd/mqplan/internal/emqttbench"
	"github.com/mqplan/mqplan/live"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/runner"
)

// cmdEmqtt runs `mqplan conn|sub|pub`: emqtt-bench's command line compiled
// into an ordinary plan (see package emqttbench), run like `mqplan run`
// runs a plan, with emqtt-bench's per-second lines on stdout and mqplan's
// report at the end.
//
// These commands are stopped with Ctrl-C, as emqtt-bench is, so unlike
// `mqplan run` a first Ctrl-C is a normal end: the report follows and the
// exit code is the thresholds' verdict (0, 1, or 4 for INCONCLUSIVE).
// Exit 3 remains for a run that could not test the broker (unreachable,
// no client of the group connected) and for a second Ctrl-C, which exits
// at once.
//
// --out, --json, --metrics-listen, --baseline and --label are `mqplan
// run`'s, checked and served by the same code (outputs, readBaseline,
// startMetrics), so that a user of emqtt-bench's command line gets every
// output run gives. When an output owns standard output, the per-second
// lines go to standard error with the table, so that it can be piped.
func cmdEmqtt(e *env, kind emqttbench.Kind, args []string) error {
	o, err := emqttbench.Parse(kind, args)
	if err != nil {
		if !strings.Contains(err.Error(), "--help") {
			// One line and where the options are, as for every command.
			err = fmt.Errorf("%w\n%s", err, helpPointer(string(kind)))
		}
		return invalid(err)
	}
	if o.Help() {
		emqttbench.WriteHelp(e.stdout, kind)
		return nil
	}
	outs, err := emqttOutputs(o)
	if err != nil {
		return err
	}
	p, err := o.Compile(newRunID())
	if err != nil {
		return invalid(err)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(e.stderr, "mqplan: note: %s\n", n)
	}
	if o.PrintPlan() {
		if _, err := io.WriteString(e.stdout, p.Text); err != nil {
			return incomplete(err)
		}
		for _, n := range p.PrintNotes {
			fmt.Fprintf(e.stderr, "mqplan: note: %s\n", n)
		}
		return nil
	}
	prog := p.Program
	if err := outs.check(input{o.Baseline(), "--baseline " + o.Baseline()}); err != nil {
		return err
	}
	var base *report.Baseline
	if o.Baseline() != "" {
		if base, err = readBaseline(e, o.Baseline()); err != nil {
			return err
		}
	}
	var exporter *live.Exporter
	if o.MetricsListen() != "" {
		var stopMetrics func()
		if exporter, stopMetrics, err = startMetrics(e, prog, o.MetricsListen(), false, liveInfo(prog, "mqplan "+string(kind), newRunID())); err != nil {
			return err
		}
		defer stopMetrics()
	}

	e.chooseProcs(0, prog.Plan.Broker)

	var stopped atomic.Bool
	ctx, stop := onSignals(e, "stopping: disconnecting and reporting", func() { stopped.Store(true) })
	defer stop()

	stdout := e.stdout
	if outs.toStdout() {
		stdout = e.stderr
	}
	lines := emqttbench.NewProgress(stdout, e.stderr, kind)
	opts := runner.Options{Progress: lines.Update, ProtocolOption: "-V"}
	hookMetrics(&opts, exporter)
	st, err := runner.Run(ctx, prog, opts)
	if err != nil {
		return incomplete(err)
	}
	var sent int64
	for i := range st.Phases {
		sent += st.Phases[i].Total.Sent
	}
	if o.Limit() > 0 && sent >= int64(o.Limit()) {
		// emqtt-bench's last line when -L is reached.
		fmt.Fprintln(stdout, "publish complete")
	}
	res := report.EvaluateWithBaseline(prog.Plan, prog.Thresholds, st, base)
	stampRun(res)
	if exporter != nil {
		exporter.Finish(liveFinal(st, res))
	}
	res.CommandLine = commandLine(string(kind), args)
	if res.Interrupted && stopped.Load() && res.Incomplete == "" {
		// Ctrl-C is how an emqtt-bench run ends: what ran is the run, and
		// its verdict is the thresholds'.
		res.Interrupted = false
	}
	fmt.Fprintln(stdout)
	if err := outs.report(e, res); err != nil {
		return err
	}
	return verdict(res)
}

// emqttOutputs are the outputs the command line asks for, parsed by the
// flags `mqplan run` parses them with, so that a mistake reads the same.
func emqttOutputs(o *emqttbench.Options) (*outputs, error) {
	var outs outputs
	for _, v := range o.Outputs() {
		if err := outs.Set(v); err != nil {
			return nil, invalid(fmt.Errorf("--out: %w", err))
		}
	}
	for _, v := range o.JSONs() {
		if err := (jsonFlag{&outs}).Set(v); err != nil {
			return nil, invalid(fmt.Errorf("--json: %w", err))
		}
	}
	if l := o.Label(); l != "" {
		if err := (labelFlag{&outs}).Set(l); err != nil {
			return nil, invalid(fmt.Errorf("--label: %w", err))
		}
	}
	return &outs, nil
}
