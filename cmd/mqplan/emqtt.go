package main

import (
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/runner"
)

// cmdEmqtt runs `mqplan conn|sub|pub`: emqtt-bench's command line compiled
// into an ordinary plan (see emqtt_plan.go), run like `mqplan run` runs a
// plan, with emqtt-bench's per-second lines on stdout and mqplan's report
// at the end.
//
// These commands are stopped with Ctrl-C, as emqtt-bench is, so unlike
// `mqplan run` a first Ctrl-C is a normal end: the report follows and the
// exit code is the thresholds' verdict (0 or 1). Exit 3 remains for a run
// that could not test the broker (unreachable, no client of the group
// connected) and for a second Ctrl-C, which exits at once.
func cmdEmqtt(e *env, kind emqttKind, args []string) (int, error) {
	o, err := parseEmqttArgs(kind, args)
	if err != nil {
		return exitInvalid, invalid(err)
	}
	if o.help {
		writeEmqttHelp(e.stdout, kind)
		return exitPass, nil
	}
	text, err := o.planYAML()
	if err != nil {
		return exitInvalid, invalid(err)
	}
	prog, err := o.loadEmqttPlan(text, newRunID())
	if err != nil {
		return exitInvalid, invalid(err)
	}
	if n := o.perClientLimit(); n > 0 && n*o.count != o.limit {
		fmt.Fprintf(e.stderr, "mqplan: note: -L %d is a limit over all %d clients; a plan's limit is per client, so each sends %d (%d in all)\n",
			o.limit, o.count, n, n*o.count)
	}
	if o.printPlan {
		if _, err := io.WriteString(e.stdout, text); err != nil {
			return exitIncomplete, incomplete(err)
		}
		if o.hasPassword {
			fmt.Fprintf(e.stderr, "mqplan: note: the password is not written in the plan; it reads it from the environment variable %s\n", emqttPasswordVar)
		}
		return exitPass, nil
	}

	runtime.GOMAXPROCS(generatorProcs(0, prog.Plan.Broker, runtime.NumCPU(), os.Getenv("GOMAXPROCS") != ""))

	var stopped atomic.Bool
	ctx, stop := onSignals(e, "stopping: disconnecting and reporting", func() { stopped.Store(true) })
	defer stop()

	lines := &emqttProgress{w: e.stdout, notices: e.stderr, kind: kind}
	st, err := runner.Run(ctx, prog, runner.Options{Progress: lines.update})
	if err != nil {
		return exitIncomplete, incomplete(err)
	}
	res := report.Evaluate(prog.Plan, prog.Thresholds, st)
	if res.Interrupted && stopped.Load() && res.Incomplete == "" {
		// Ctrl-C is how an emqtt-bench run ends: what ran is the run, and
		// its verdict is the thresholds'.
		res.Interrupted = false
	}
	fmt.Fprintln(e.stdout)
	if err := report.WriteTable(e.stdout, res); err != nil {
		return exitIncomplete, incomplete(fmt.Errorf("write report: %w", err))
	}
	return verdictCode(res), nil
}

// emqttProgress prints emqtt-bench's per-second lines from the runner's
// progress, once a second, and only when the count changed (as
// emqtt-bench does):
//
//	conn: connected(<s>s): total=N, rate=N(conn/sec)
//	sub:  recv(<s>s): total=N, rate=N(msg/sec)
//	pub:  sent(<s>s): total=N, rate=N(msg/sec)
//
// Once every client has connected (and subscribed), a notice says so on
// notices (stderr), since a sub prints nothing until messages arrive.
type emqttProgress struct {
	w, notices io.Writer
	kind       emqttKind

	last                time.Duration
	total, printedTotal int64
	printed, ready      bool
	// printedSecond is the second of the last line printed: the run's
	// final snapshot comes a fraction of a second after the last tick and
	// would print that second again.
	printedSecond string
}

func (p *emqttProgress) update(pr runner.Progress) {
	if !p.ready && p.notices != nil && pr.Phase != phase.Connect && pr.Phase != phase.Subscribe {
		p.ready = true
		what := map[emqttKind]string{emqttConn: "connected", emqttSub: "connected and subscribed", emqttPub: "connected and publishing"}[p.kind]
		n := pr.Connected
		if p.kind == emqttSub {
			// A client whose every subscription was refused is not
			// subscribed, however connected it is.
			n = pr.Subscribed
		}
		fmt.Fprintf(p.notices, "mqplan: %d of %d clients %s (Ctrl-C to stop)\n", n, pr.Clients, what)
	}
	secs := (pr.Elapsed - p.last).Seconds()
	p.last = pr.Elapsed
	if secs <= 0 {
		return
	}
	var name, unit string
	var rate float64
	switch p.kind {
	case emqttConn:
		name, unit = "connected", "conn/sec"
		rate = float64(int64(pr.Connected)-p.total) / secs
		p.total = int64(pr.Connected)
	case emqttSub:
		name, unit, rate, p.total = "recv", "msg/sec", pr.RecvRate, pr.Received
	case emqttPub:
		name, unit, rate, p.total = "sent", "msg/sec", pr.SendRate, pr.Sent
	}
	second := fmt.Sprintf("%.0fs", pr.Elapsed.Seconds())
	if p.printed && (p.total == p.printedTotal || second == p.printedSecond) || !p.printed && p.total == 0 {
		return
	}
	p.printed, p.printedTotal, p.printedSecond = true, p.total, second
	fmt.Fprintf(p.w, "%s(%s): total=%d, rate=%.0f(%s)\n", name, second, p.total, rate, unit)
}
