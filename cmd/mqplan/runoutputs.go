package main

import (
	"errors"
	"fmt"
	"os"
	"unicode"
	"unicode/utf8"

	"github.com/mqplan/mqplan/live"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/runner"
)

// What a run gives besides its table, shared by `mqplan run` and the
// emqtt-bench commands (`mqplan pub/sub/conn`): the baseline it is judged
// against, the live metrics endpoint, and the label and host the outputs
// name.

// maxLabel bounds --label: it is repeated in every JUnit test case's name.
const maxLabel = 100

// labelFlag is --label NAME (outputs.label).
type labelFlag struct{ o *outputs }

func (l labelFlag) String() string { return "" }

// Set takes a label: 1 to maxLabel bytes of printable UTF-8, since it
// becomes part of names in XML, Markdown and HTML titles.
func (l labelFlag) Set(v string) error {
	if err := checkLabel(v); err != nil {
		return err
	}
	l.o.label = v
	return nil
}

// checkLabel refuses a label that is empty, longer than maxLabel bytes,
// not UTF-8, or holds a control character.
func checkLabel(v string) error {
	switch {
	case v == "":
		return errors.New("want a name, e.g. --label emqx-5.8")
	case len(v) > maxLabel:
		return fmt.Errorf("at most %d bytes, got %d", maxLabel, len(v))
	case !utf8.ValidString(v):
		return errors.New("not valid UTF-8")
	}
	for _, c := range v {
		if unicode.IsControl(c) {
			return fmt.Errorf("a control character (%U) in %q", c, v)
		}
	}
	return nil
}

// labelHelp is --label's help, the same for every command that takes it.
const labelHelp = "name this run among others (the broker or setup a CI matrix job tests, e.g. emqx-5.8): shown after the plan's name in every output, the JSON's label, and in JUnit's suite and test case names so that merged reports keep them apart"

// stamp sets the result's label from --label, when given.
func (o *outputs) stamp(res *report.Result) {
	if o.label != "" {
		res.Label = o.label
	}
}

// stampRun records what made a result that this process ran or merged:
// the mqplan version and the host (JUnit's hostname; for a sharded run,
// the coordinator's or merging machine, where its report is made).
func stampRun(res *report.Result) {
	res.SetMqplanVersion(resultVersion())
	if h, err := os.Hostname(); err == nil {
		res.Hostname = h
	}
}

// readBaseline reads --baseline FILE, before anything connects: a wrong
// file must not cost a whole run.
func readBaseline(e *env, path string) (*report.Baseline, error) {
	saved, err := readResult(e, path)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	if !saved.Complete() {
		// An incomplete run measured too little to compare with:
		// sent >= baseline.sent would hold against a run that sent
		// nothing.
		return nil, invalid(fmt.Errorf("--baseline %s: that run did not complete (%s), so it cannot be a baseline", path, saved.Verdict()))
	}
	return &report.Baseline{File: path, Result: saved}, nil
}

// startMetrics makes the live Prometheus metrics of prog's groups and
// serves them on addr (--metrics-listen; "" when they are only pushed),
// bound before anything connects so that a port in use does not cost a
// whole run. stop closes the endpoint.
func startMetrics(e *env, prog *plans.Program, addr string, quiet bool, info live.Info) (exp *live.Exporter, stop func(), err error) {
	names := make([]string, len(prog.Groups))
	for i, g := range prog.Groups {
		names[i] = g.Name
	}
	exp = live.New(names, info)
	if addr == "" {
		return exp, func() {}, nil // pushed only (--metrics-push)
	}
	srv, err := live.Listen(addr, exp.Handler())
	if err != nil {
		return nil, nil, invalid(fmt.Errorf("--metrics-listen: %w", err))
	}
	if !srv.Loopback() {
		fmt.Fprintf(e.stderr, "mqplan: note: --metrics-listen %s is reachable from other machines, not only this one\n", srv.Addr())
	}
	if !quiet {
		fmt.Fprintf(e.stderr, "mqplan: Prometheus metrics at %s\n", srv.URL())
	}
	return exp, func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintf(e.stderr, "mqplan: warning: %s\n", errText(err))
		}
	}, nil
}

// hookMetrics feeds the exporter from the run (nil: no endpoint).
func hookMetrics(opts *runner.Options, exp *live.Exporter) {
	if exp == nil {
		return
	}
	opts.Second = exp.Observe
	opts.Latency = exp.ObserveLatency
	opts.Ack = exp.ObserveAck
	opts.LostSoFar = exp.ObserveLost
}
