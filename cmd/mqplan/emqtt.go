package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/mqplan/mqplan/cmd/mqplan/internal/emqttbench"
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

	e.chooseProcs(0, prog.Plan.Broker)

	var stopped atomic.Bool
	ctx, stop := onSignals(e, "stopping: disconnecting and reporting", func() { stopped.Store(true) })
	defer stop()

	lines := emqttbench.NewProgress(e.stdout, e.stderr, kind)
	st, err := runner.Run(ctx, prog, runner.Options{Progress: lines.Update, ProtocolOption: "-V"})
	if err != nil {
		return incomplete(err)
	}
	var sent int64
	for i := range st.Phases {
		sent += st.Phases[i].Total.Sent
	}
	if o.Limit() > 0 && sent >= int64(o.Limit()) {
		// emqtt-bench's last line when -L is reached.
		fmt.Fprintln(e.stdout, "publish complete")
	}
	res := report.Evaluate(prog.Plan, prog.Thresholds, st)
	res.SetMqplanVersion(resultVersion())
	if res.Interrupted && stopped.Load() && res.Incomplete == "" {
		// Ctrl-C is how an emqtt-bench run ends: what ran is the run, and
		// its verdict is the thresholds'.
		res.Interrupted = false
	}
	fmt.Fprintln(e.stdout)
	if err := report.WriteTable(e.stdout, res); err != nil {
		return incomplete(fmt.Errorf("write report: %w", err))
	}
	return verdict(res)
}
