package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqplan/mqplan/coord"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/runner"
	"github.com/mqplan/mqplan/stats"
)

// maxWorkers bounds --workers: each is a process with its own share of
// the CPUs, and more of them than a machine has cores buys nothing.
const maxWorkers = 256

// runWorkers runs the plan as n child processes on this machine (mqplan
// run --workers N): the children are shards 0…n−1 of the run (re-executed
// from this binary, GOMAXPROCS split among them, confined to the run's
// CPUs when there are fewer than children (workerCPUs), each with its own
// fd limit, the reason the mode exists), this process is their coordinator
// and hosts the embedded broker when the plan asks for it, and prints
// one merged report. Ctrl-C or SIGTERM here stops every child through the
// coordinator.
func runWorkers(e *env, sf *shardFlags, pf *planFlags, path string, raw []string, outs *outputs, procs int, quiet bool) error {
	if sf.shard != "" || sf.coordinator != "" {
		return invalid(errors.New("--workers runs its own shards and coordinator: give neither --shard nor --coordinator"))
	}
	if sf.token.file != "" {
		return invalid(errors.New("--workers with --token-file: the workers get a token of their own, made for the run, through their environment"))
	}
	if sf.sources != "" {
		return invalid(errors.New("--workers with --source-addresses: the workers share out the plan's broker.source_addresses (j ≡ i mod N); --source-addresses is for one --shard a machine"))
	}
	n := 0
	if sf.workers != "auto" {
		var err error
		if n, err = strconv.Atoi(sf.workers); err != nil || n < 1 || n > maxWorkers {
			return invalid(fmt.Errorf("--workers %q: give 1 to %d, or auto", sf.workers, maxWorkers))
		}
	}
	if path == "-" {
		return invalid(errors.New("--workers: the workers read the plan from its file: give a file, not standard input"))
	}
	dir, err := os.MkdirTemp("", "mqplan-workers")
	if err != nil {
		return incomplete(err)
	}
	defer os.RemoveAll(dir)
	runID := sf.runID
	if runID == "" {
		runID = newRunID()
	}
	// The plan as the children will load it, for the hello they must
	// match: an embedded broker is started here and named by --broker.
	prog, part, err := pf.loadForPartial(e, path, runID, filepath.Join(dir, "plan.json"))
	if err != nil {
		return err
	}
	hosted := prog.Plan.Broker.IsEmbedded()
	var embedded runner.EmbeddedBroker
	if hosted {
		b, err := runOptions(prog).Embedded()
		if err != nil {
			return incomplete(fmt.Errorf("start embedded broker: %w", err))
		}
		defer b.Close(5 * time.Second)
		embedded = b
		pf.broker = b.URL()
		if prog, part, err = pf.loadForPartial(e, path, runID, filepath.Join(dir, "plan.json")); err != nil {
			return err
		}
	}
	if err := shardable(prog); err != nil {
		return invalid(err)
	}
	if n == 0 {
		if n, err = autoWorkers(prog, systemLimits().OpenFiles); err != nil {
			return invalid(err)
		}
		if !quiet {
			fmt.Fprintf(e.stderr, "mqplan: --workers auto: %d workers for %d clients under the open-file limit %d\n", n, len(prog.Clients), systemLimits().OpenFiles)
		}
	}
	a, err := plans.Assign(prog, n)
	if err != nil {
		return invalid(err)
	}
	if err := fitsShards(prog, a, systemLimits(), -1, hosted, "use more workers (--workers auto finds how many)"); err != nil {
		return err
	}
	hello := coord.Hello{N: n, RunID: runID, PlanSHA256: part.plan.Hash(), AssignSHA256: a.Hash, Version: buildVersion(), Broker: helloBroker(prog)}
	// The workers authenticate as any shard, with a token made for this
	// run and handed to them in their environment, never their arguments
	// (which every user of the machine sees).
	tok := newWorkerToken()
	cfg := coord.Config{Hello: hello, JoinTimeout: sf.timeout, Secret: tok.secret}
	tellRefusals(e, &cfg)
	if !quiet {
		cfg.Joined = func() { fmt.Fprintf(e.stderr, "mqplan: all %d workers joined: the run starts\n", n) }
	}
	// A worker lost (stopped, hung, cut off) is ended at once: its
	// connection is gone, so it can neither hand in nor stop, and the
	// wait for every worker's exit below would otherwise last its minute.
	var children []*exec.Cmd
	cfg.Lost = func(i int, why error) {
		fmt.Fprintf(e.stderr, "mqplan: worker %d/%d lost: %v: ended; the run goes on without it, and is incomplete\n", i, n, why)
		if i >= 0 && i < len(children) {
			_ = children[i].Process.Kill()
		}
	}
	co, err := coord.Listen("127.0.0.1:0", cfg)
	if err != nil {
		return incomplete(err)
	}
	exe, err := workerExecutable()
	if err != nil {
		co.Close()
		return incomplete(fmt.Errorf("--workers: this program's own file, to run the workers: %w", err))
	}
	if procs <= 0 {
		v, _ := e.lookupEnv("GOMAXPROCS")
		procs = generatorProcs(0, prog.Plan.Broker, runtime.NumCPU(), v != "")
	}
	each := max(1, procs/n)
	cpus := workerCPUs(allowedCPUs(), procs, n)
	// Signals are taken before the first worker starts: a stop reaches
	// every worker through the coordinator, whenever it comes.
	ctx, stopSigs := onSignals(e, "interrupted: stopping every worker and reporting what was measured", nil)
	defer stopSigs()
	base := withoutFlag(raw, "workers")
	var wg sync.WaitGroup
	for i := range n {
		args := append([]string{"run"}, base...)
		args = append(args, "--shard", fmt.Sprintf("%d/%d", i, n), "--coordinator", co.Addr(), "--coordinator-dial",
			"--run-id", runID, "--partial", filepath.Join(dir, fmt.Sprintf("part-%d.json", i)), "--quiet",
			"--procs", strconv.Itoa(each))
		if pf.broker != "" {
			args = append(args, "--broker", pf.broker)
		}
		cmd := exec.Command(exe, args...)
		cmd.Stdout, cmd.Stderr = e.stderr, e.stderr
		cmd.Env = append(withoutEnv(os.Environ(), envTokenFile, envToken), "GOMAXPROCS="+strconv.Itoa(each), envToken+"="+string(tok.secret))
		if err := startOn(cmd, cpus); err != nil {
			co.Close()
			for _, c := range children {
				_ = c.Process.Kill()
			}
			return incomplete(fmt.Errorf("--workers: start worker %d: %w", i, err))
		}
		children = append(children, cmd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = cmd.Wait() // its exit shows in the coordinator's result
		}()
	}
	if !quiet {
		where := ""
		if cpus != nil {
			where = fmt.Sprintf(", sharing CPUs %v", cpus)
		}
		fmt.Fprintf(e.stderr, "mqplan: %d workers running %s (%d CPUs each%s), coordinated here\n", n, path, each, where)
	}
	res, err := co.Serve(ctx)
	if err != nil {
		// The run never started (stopped, or a worker missing or
		// refused): the workers still waiting for it have nothing to do.
		for _, c := range children {
			_ = c.Process.Kill()
		}
		wg.Wait()
		return coordinatorErr(err)
	}
	// Every worker has handed in its part and exits at once; one that
	// does not within a minute is stuck, and is ended.
	exited := make(chan struct{})
	go func() { wg.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		for _, c := range children {
			_ = c.Process.Kill()
		}
		<-exited
	}
	var bs *stats.Broker
	if embedded != nil {
		// The broker the plan asked for is this process's, as in one
		// process: its counters (the report's Broker table, its drops)
		// are the whole run's, every worker gone.
		s := embedded.Stats()
		bs = &s
	}
	return judgeCollected(e, res, outs, bs)
}

// withoutEnv returns env (NAME=VALUE entries) without the names given.
func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// workerExecutable is the program --workers runs as its children: this
// one (a test sets the built binary).
var workerExecutable = os.Executable

// withoutFlag returns args without flag name and its value (--name V,
// --name=V, -name V).
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		bare := strings.TrimLeft(a, "-")
		switch {
		case a != bare && bare == name:
			i++ // its value
		case a != bare && strings.HasPrefix(bare, name+"="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// workerFDMargin is what --workers auto leaves of each worker's open-file
// limit beyond its connections: the runtime, stdio, its coordinator
// connection, the files it writes.
const workerFDMargin = 256

// autoWorkers is --workers auto: the fewest workers whose shards each
// hold their clients' connections within the open-file limit (limit 0,
// unknown: one worker). The parent's embedded broker, if any, holds the
// other end of every connection in one process: that is the broker's
// limit, which no number of workers lifts.
func autoWorkers(prog *plans.Program, limit int) (int, error) {
	if limit <= 0 {
		return 1, nil
	}
	room := limit - workerFDMargin
	if room < 1 {
		return 0, fmt.Errorf("--workers auto: the open-file limit %d leaves no room for connections", limit)
	}
	for n := max(1, (len(prog.Clients)+room-1)/room); n <= maxWorkers; n++ {
		a, err := plans.Assign(prog, n)
		if err != nil {
			return 0, err
		}
		if slices.Max(a.Counts()) <= room {
			return n, nil
		}
	}
	return 0, fmt.Errorf("--workers auto: %d clients do not fit %d workers of %d connections each", len(prog.Clients), maxWorkers, room)
}
