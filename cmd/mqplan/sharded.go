package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/mqplan/mqplan/coord"
	"github.com/mqplan/mqplan/internal/outfile"
	"github.com/mqplan/mqplan/partial"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/runner"
	"github.com/mqplan/mqplan/stats"
)

// shardFlags are mqplan run's flags for a run split across processes.
type shardFlags struct {
	shard       string
	coordinator string
	runID       string
	timeout     time.Duration
	// dial makes shard 0 dial the coordinator instead of being it: the
	// children of --workers, whose parent coordinates.
	dial    bool
	workers string
	// sources are this machine's --source-addresses (sources.go).
	sources string
	// token is --token-file: the run's secret (token.go).
	token tokenFlag
}

func (sf *shardFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.shard, "shard", "", "run shard I of N (I/N, e.g. 0/4) of the plan: only the clients plans.Assign gives it, meeting the others through --coordinator")
	fs.StringVar(&sf.coordinator, "coordinator", "", "with --shard, the coordinator's HOST:PORT: shard 0 listens there, the others dial it (retrying until --coordinator-timeout)")
	fs.StringVar(&sf.runID, "run-id", "", "with --shard, the run's id, the same on every shard: it makes client ids, and shards of other runs are refused")
	fs.DurationVar(&sf.timeout, "coordinator-timeout", 5*time.Minute, "with --shard, how long to wait for the coordinator, and the coordinator for every shard")
	fs.StringVar(&sf.workers, "workers", "", "run the plan as N shards in N child processes of this machine, this process their coordinator (and the embedded broker's host): one merged report; auto: as many as the plan's connections need under the open-file limit")
	fs.StringVar(&sf.sources, "source-addresses", "", "with --shard, this machine's local IP addresses (A,B,...) that the shard's clients connect from, round-robin, in place of the plan's broker.source_addresses: each machine of a run has its own, and the plan stays the same on all")
	fs.BoolVar(&sf.dial, "coordinator-dial", false, "with --shard 0/N, dial the coordinator rather than be it (what --workers gives its children)")
	sf.token.register(fs, "with --shard, the file holding the run's token, the same on every shard: it authenticates every shard to the coordinator and signs the parts (without one, the coordinator listens on loopback only); with --partial, signs the part")
}

// parseShard reads I/N.
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || n > plans.MaxShards || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 ≤ I < N ≤ %d, e.g. 0/4", s, plans.MaxShards)
	}
	return i, n, nil
}

// shardRun is everything one shard's process needs, checked before
// anything connects.
type shardRun struct {
	index, n int
	prog     *plans.Program
	part     *partialRun
	assign   *plans.Assignment
	hello    coord.Hello
	// tok is the run's token, nil for none.
	tok *token
}

// prepareShard loads the plan for shard I/N, refuses what a sharded run
// cannot do, and computes the assignment.
func prepareShard(e *env, sf *shardFlags, pf *planFlags, path, partialFile string, unsupported map[string]bool) (*shardRun, error) {
	i, n, err := parseShard(sf.shard)
	if err != nil {
		return nil, invalid(err)
	}
	switch {
	case sf.coordinator == "":
		return nil, invalid(errors.New("--shard: --coordinator HOST:PORT is missing: every shard meets the others there"))
	case sf.runID == "":
		return nil, invalid(errors.New("--shard: --run-id is missing: give every shard the same id (it makes the client ids)"))
	}
	for name, set := range unsupported {
		if set {
			return nil, invalid(fmt.Errorf("--shard with --%s: not supported yet", name))
		}
	}
	tok, err := sf.token.load(e)
	if err != nil {
		return nil, err
	}
	if partialFile == "" {
		// The default file is kept where it can be written: in a
		// container with a read-only root it cannot, and the part goes
		// to the coordinator only.
		partialFile = fmt.Sprintf("mqplan-part-%d-of-%d.json", i, n)
		if err := outfile.Check(partialFile); err != nil {
			fmt.Fprintf(e.stderr, "mqplan: note: shard %d/%d keeps no copy of its partial result (%s: %v): give --partial FILE on a writable volume to keep one\n", i, n, partialFile, err)
			partialFile = ""
		}
	}
	prog, part, err := pf.loadForPartial(e, path, sf.runID, partialFile)
	if err != nil {
		return nil, err
	}
	for _, u := range prog.Plan.Broker.URLs {
		if u == plans.Embedded {
			return nil, invalid(fmt.Errorf("--shard: the plan's broker is %q, which each shard would start on its own: give a broker every shard reaches (--broker URL), or use --workers N, which hosts it", plans.Embedded))
		}
	}
	if err := shardable(prog); err != nil {
		return nil, invalid(err)
	}
	a, err := plans.Assign(prog, n)
	if err != nil {
		return nil, invalid(err)
	}
	if err := fitsShards(prog, a, systemLimits(), i, false, "use more shards (mqplan explain --shards N shows what each needs)"); err != nil {
		return nil, err
	}
	switch {
	case sf.sources != "":
		own, err := parseSourceAddresses(sf.sources)
		if err != nil {
			return nil, invalid(err)
		}
		bindSources(prog, a.Mask(i), own)
	case sf.dial:
		// A --workers child: the machine's source addresses are shared
		// among the workers, each binding its own (after the plan's
		// hash is taken: the plan is the same for all).
		partitionSources(prog, a.Mask(i), i, n)
	}
	part.tok = tok
	return &shardRun{index: i, n: n, prog: prog, part: part, assign: a, tok: tok, hello: coord.Hello{
		Shard: i, N: n, RunID: sf.runID, PlanSHA256: part.plan.Hash(), AssignSHA256: a.Hash, Version: buildVersion(),
		Broker: helloBroker(prog),
	}}, nil
}

// runShard runs one shard. Shard 0 (unless --coordinator-dial) is also
// the coordinator: it collects every part, merges them and judges the
// merge as mqplan merge does (exit 0, 1 or 3). Another shard exits 0 once
// the coordinator has its part, 3 if not; its part file is written either
// way.
func runShard(e *env, sf *shardFlags, sr *shardRun, outs *outputs, quiet bool) error {
	sigCtx, stopSigs := onSignals(e, "interrupted: stopping every shard and reporting what was measured", nil)
	defer stopSigs()

	var served chan servedRun
	if sr.index == 0 && !sf.dial {
		co, err := listenCoordinator(e, sf.coordinator, coord.Config{Hello: sr.hello, JoinTimeout: sf.timeout, Secret: secretOf(sr.tok),
			Lost: func(i int, why error) {
				fmt.Fprintf(e.stderr, "mqplan: shard %d/%d lost: %v: the run goes on without it, and is incomplete\n", i, sr.n, why)
			}})
		if err != nil {
			return err
		}
		served = make(chan servedRun, 1)
		go func() {
			res, err := co.Serve(sigCtx)
			served <- servedRun{res, err}
		}()
	}
	tc, err := testClock(e, sr.index)
	if err != nil {
		return invalid(err)
	}
	if tc != (coord.TestClock{}) {
		fmt.Fprintf(e.stderr, "mqplan: shard %d/%d: TEST HOOK: %s: its latencies are not to be trusted\n", sr.index, sr.n, tc)
	}
	joinCtx, cancelJoin := context.WithTimeout(sigCtx, sf.timeout)
	sh, err := coord.JoinWith(joinCtx, sf.coordinator, sr.hello, secretOf(sr.tok), sf.timeout, 0, tc)
	cancelJoin()
	var refused *coord.RefusedError
	var authErr *coord.AuthError
	switch {
	case errors.As(err, &refused):
		return invalid(fmt.Errorf("shard %d/%d refused by the coordinator: %w", sr.index, sr.n, err))
	case errors.As(err, &authErr):
		return invalid(fmt.Errorf("shard %d/%d: %w", sr.index, sr.n, err))
	case err != nil:
		if served != nil {
			if s := <-served; s.err != nil {
				return coordinatorErr(s.err)
			}
		}
		return incomplete(err)
	}
	defer sh.Close()
	theta, delta := sh.Clock()
	if !quiet {
		host := ""
		if sh.SameHost() {
			host = ", same host"
		}
		fmt.Fprintf(e.stderr, "mqplan: shard %d/%d joined %s (clock offset %v ± %v%s); %d of %d clients are this shard's\n",
			sr.index, sr.n, sf.coordinator, theta, delta, host, sr.assign.Counts()[sr.index], len(sr.prog.Clients))
	}
	// A stop from the coordinator (another shard interrupted, or the
	// coordinator lost) stops this shard as Ctrl-C would; Ctrl-C here
	// stops every shard.
	ctx, cancel := context.WithCancel(sigCtx)
	defer cancel()
	go func() {
		select {
		case <-sh.Stopped():
			if err := sh.Lost(); err != nil && !sh.Acknowledged() {
				fmt.Fprintf(e.stderr, "mqplan: shard %d/%d: %v: stopping and writing the partial result\n", sr.index, sr.n, err)
			}
			cancel()
		case <-sigCtx.Done():
			sh.Stop()
		case <-ctx.Done():
		}
	}()

	opts := runOptions(sr.prog)
	opts.Shard = &runner.Shard{Index: sr.index, Count: sr.n, Owned: sr.assign.Mask(sr.index),
		ExpectedByShard: sr.assign.ExpectedByShard, Sync: sh, ShardOf: sr.assign.Shard}
	var pp *progressPrinter
	if !quiet {
		pp = newProgressPrinter(e.stderr, sr.prog)
		opts.Progress = pp.print
	}
	sr.part.hook(&opts)
	st, err := runner.Run(ctx, sr.prog, opts)
	if pp != nil {
		pp.finish()
	}
	if err != nil {
		return incomplete(err)
	}
	if len(st.Phases) == 0 {
		// It never started (no common epoch): the coordinator says why.
		if served != nil {
			if s := <-served; s.err != nil {
				return coordinatorErr(s.err)
			}
		}
		return incomplete(fmt.Errorf("shard %d/%d: %s", sr.index, sr.n, st.Incomplete))
	}
	epoch := sh.EpochWall()
	pubStart := epoch + int64(st.Phases[phase.Warmup].Start)
	if f, err := sr.part.file(st, partial.Shard{Index: sr.index, Count: sr.n, Assignment: sr.assign.Version, AssignSHA256: sr.assign.Hash},
		shardClock(e, sh, tc, epoch, pubStart, sr.index, sr.n)); err != nil {
		return incomplete(err)
	} else {
		var b bytes.Buffer
		if err := sr.part.encode(&b, f); err != nil {
			return incomplete(err)
		}
		kept := "no copy of it was kept"
		if sr.part.path != "" {
			if err := sr.part.save(b.Bytes()); err != nil {
				fmt.Fprintf(e.stderr, "mqplan: %v\n", err)
			} else {
				kept = "the part is in " + sr.part.path + ": mqplan merge takes it"
			}
		}
		if err := sh.HandIn(b.Bytes(), time.Minute); err != nil {
			return incomplete(fmt.Errorf("shard %d/%d: %w (%s)", sr.index, sr.n, err, kept))
		}
	}
	if served == nil {
		if !quiet {
			fmt.Fprintf(e.stderr, "mqplan: shard %d/%d: the coordinator has this shard's part\n", sr.index, sr.n)
		}
		return nil
	}
	s := <-served
	if s.err != nil {
		return coordinatorErr(s.err)
	}
	return judgeCollected(e, s.res, outs, nil)
}

// listenCoordinator listens for a sharded run's shards at addr
// (--coordinator, or --workers' loopback address), telling of refused
// peers and of connections that do not speak the protocol on stderr.
// Without a token (cfg.Secret empty) it listens on loopback only, and says
// so: bound beyond it, anyone who reaches the port could join the run.
func listenCoordinator(e *env, addr string, cfg coord.Config) (*coord.Coordinator, error) {
	tellRefusals(e, &cfg)
	co, err := coord.Listen(addr, cfg)
	if err != nil {
		return nil, invalid(fmt.Errorf("--coordinator %s: %w", addr, err))
	}
	if len(cfg.Secret) == 0 {
		if !loopbackAddr(co.Addr()) {
			co.Close()
			return nil, invalid(fmt.Errorf("--coordinator %s listens on %s, beyond loopback: %w", addr, co.Addr(), errNoToken))
		}
		fmt.Fprintf(e.stderr, "mqplan: note: no token (--token-file): the coordinator listens on loopback only (%s), its shards unauthenticated\n", co.Addr())
	}
	return co, nil
}

// tellRefusals makes the coordinator tell on stderr, in one line each, of
// the peers it refused for failing authentication and of the connections
// that did not speak its protocol.
func tellRefusals(e *env, cfg *coord.Config) {
	cfg.Refused = func(peer string, why error) {
		fmt.Fprintf(e.stderr, "mqplan: refused a peer at %s: %v: the run is incomplete\n", peer, why)
	}
	cfg.Noise = func(peer string, why error) {
		fmt.Fprintf(e.stderr, "mqplan: note: closed a connection from %s that does not speak the coordinator protocol (%v); it does not touch the run\n", peer, why)
	}
}

// loopbackAddr reports whether a listener's address is a loopback one
// (127.0.0.0/8, ::1); an unspecified one (0.0.0.0, ::) is every
// interface's.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// servedRun is what Coordinator.Serve returned.
type servedRun struct {
	res *coord.Result
	err error
}

// coordinatorErr picks the exit code of a run the coordinator could not
// hold: a refusal is invalid input (2), the rest incomplete (3).
func coordinatorErr(err error) error {
	var refused *coord.RefusedError
	if errors.As(err, &refused) {
		return invalid(fmt.Errorf("coordinator: %w", err))
	}
	return incomplete(fmt.Errorf("coordinator: %w", err))
}

// judgeCollected merges the parts the coordinator collected and judges
// them as mqplan merge does. A shard lost or missing makes the run
// incomplete (exit 3), with what the others measured. embedded is the
// counters of the embedded broker the coordinator hosted (--workers),
// nil when there was none: no shard could read them.
func judgeCollected(e *env, res *coord.Result, outs *outputs, embedded *stats.Broker) error {
	var files []*partial.File
	var missing []string
	for i, data := range res.Parts {
		if data == nil {
			missing = append(missing, strconv.Itoa(i))
			continue
		}
		f, err := partial.Parse(fmt.Sprintf("shard %d's part", i), data)
		if err != nil {
			return incomplete(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		if res.Stopped {
			return incomplete(errors.New("stopped before the run started: no shard measured anything"))
		}
		return incomplete(errors.New("no shard handed in its part"))
	}
	if len(missing) > 0 {
		fmt.Fprintf(e.stderr, "mqplan: shards %s lost during the run: the report holds what the others measured, and the run is incomplete\n", strings.Join(missing, ", "))
	}
	merged, err := mergeParts(files, len(missing) > 0)
	if err != nil {
		return err
	}
	if len(res.Refused) > 0 {
		// A peer that spoke the protocol and failed its authentication
		// tried to take part: the run cannot be vouched for.
		why := fmt.Sprintf("%d peers failed authentication: %s", len(res.Refused), strings.Join(res.Refused, "; "))
		if merged.Stats.Incomplete != "" {
			why = merged.Stats.Incomplete + "; " + why
		}
		merged.Stats.Incomplete = why
		merged.Stats.Notices = append(merged.Stats.Notices, res.Refused...)
	}
	if embedded != nil {
		merged.Stats.Broker, merged.Stats.BrokerApart = embedded, true
	}
	return verdictOf(e, merged, outs)
}

// verdictOf is judgeParts' evaluation, for the coordinator and mqplan
// merge alike.
func verdictOf(e *env, merged *partial.Merged, outs *outputs) error {
	prog, err := reloadPlan(e, merged)
	if err != nil {
		return invalid(err)
	}
	if len(merged.Missing) == 0 {
		// The broker's counters against the whole run's, as one process
		// checks them: a shard's own are only a part of what it saw.
		merged.Stats.Notices = append(merged.Stats.Notices, runner.CrossCheck(prog, merged.Stats)...)
	}
	res := report.Evaluate(prog.Plan, prog.Thresholds, merged.Stats)
	// The mqplan, and the machine, that judged the parts; each part
	// records its own shard's version (partial.Header.MqplanVersion).
	stampRun(res)
	if err := outs.report(e, res); err != nil {
		return err
	}
	return verdict(res)
}

// partitionSources gives shard i of n on one machine its share of the
// plan's broker.source_addresses, the addresses j ≡ i (mod n) (the one at
// i mod their count when there are fewer addresses than shards), bound
// round-robin by its owned clients, so that two workers never compete for
// the ports of one address.
func partitionSources(prog *plans.Program, owned []bool, i, n int) {
	sa := prog.Plan.Broker.SourceAddresses
	if len(sa) == 0 {
		return
	}
	var own []string
	for j := i; j < len(sa); j += n {
		own = append(own, sa[j])
	}
	if len(own) == 0 {
		own = []string{sa[i%len(sa)]}
	}
	bindSources(prog, owned, own)
}

// shardable refuses, with the plan's position, what a sharded run cannot
// measure exactly yet: a subscribing group that churns with a clean
// session, whose windows are read from its publishers' counters in the
// same process (runner/clean_run.go).
func shardable(prog *plans.Program) error {
	var errs []error
	for _, gp := range prog.Groups {
		if gp.Count == 0 {
			continue
		}
		c := &prog.Clients[gp.First]
		g := &prog.Plan.Groups[c.Group]
		if s, _ := prog.ChurnOf(c); s != nil && g.CleanStart && len(g.Subscribe) > 0 {
			errs = append(errs, &plans.Error{Pos: g.Pos, Path: "groups." + g.Name + ".clean_start",
				Msg: "a subscribing group that churns with a clean session: not supported yet in a sharded run (--shard, --workers): its windows are judged from its publishers' counters in one process"})
		}
	}
	return errors.Join(errs...)
}

// helloBroker names the brokers a shard's clients connect to, for its
// hello (coord.Hello.Broker), user information redacted.
func helloBroker(prog *plans.Program) string {
	urls := make([]string, len(prog.Plan.Broker.URLs))
	for i, u := range prog.Plan.Broker.URLs {
		urls[i] = plans.RedactURL(u)
	}
	return strings.Join(urls, ",")
}
