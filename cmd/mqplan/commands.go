package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/outfile"
	"github.com/mqplan/mqplan/live"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/runner"
	"golang.org/x/term"
)

// stringList is a repeatable string flag (--set a=b --set c=d).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// newFlags returns a flag set that reports errors instead of exiting. Its
// --help shows the command's examples (commandExamples) after the flags.
func newFlags(e *env, name, args, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n%s\n", strings.TrimSpace("mqplan "+name+" "+args), help)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(fs.Output(), "\nFlags:\n")
			fs.PrintDefaults()
		}
		if ex := commandExamples[name]; len(ex) > 0 {
			fmt.Fprintf(fs.Output(), "\nExamples:\n")
			for _, line := range ex {
				fmt.Fprintf(fs.Output(), "  %s\n", line)
			}
		}
	}
	return fs
}

// commandExamples are the command lines each command's --help ends with:
// the shortest way to the common uses, runnable from a checkout.
var commandExamples = map[string][]string{
	"run": {
		"mqplan run plans/1to1-qos1.yaml                                   # embedded broker",
		"mqplan run --broker mqtt://127.0.0.1:1883 --set duration=30s plans/fanin-qos1.yaml",
		"mqplan run --quiet --out json=result.json --out table=summary.txt plans/1to1-qos1.yaml",
		"mqplan run --quiet --out junit=junit.xml --out md=summary.md plans/1to1-qos1.yaml   # CI test report and summary",
		"mqplan run --metrics-listen :9464 --metrics-linger 30s plans/soak.yaml   # Prometheus scrapes http://127.0.0.1:9464/metrics while it runs, and 30 s after",
		"mqplan run --partial mqplan-part-0-of-1.json plans/1to1-qos1.yaml   # also the raw counters and histograms, for mqplan merge",
		"mqplan run --shard 1/4 --coordinator mqplan-0:7070 --run-id r1 --token-file token plans/1to1-qos1.yaml   # one shard of four; token: head -c 32 /dev/urandom | base64 > token",
	},
	"validate": {
		"mqplan validate plans/*.yaml",
		"mqplan validate --set groups.sensors.count=5000 plans/fanin-qos1.yaml",
	},
	"explain": {
		"mqplan explain plans/conn-storm.yaml",
		"mqplan explain --set groups.sub.count=100000 plans/fanout-qos0.yaml   # fds and ports it would need",
		"mqplan explain --shards 10 plans/xmeter-100k.yaml                 # split over 10 processes: clients, msg/s, fds per shard",
	},
	"broker": {
		"mqplan broker --listen 127.0.0.1:1883",
		"mqplan broker --listen 127.0.0.1:8883 --tls-cert server.pem --tls-key server.key --ws 127.0.0.1:8080",
		"mqplan broker --duplicate-every 100                               # a broker that duplicates, on purpose",
	},
	"schema": {
		"mqplan schema > mqplan-plan.schema.json   # then start a plan with: # yaml-language-server: $schema=mqplan-plan.schema.json",
	},
	"report": {
		"mqplan report now.json                                            # the table the run printed",
		"mqplan report --out html=report.html now.json                    # no broker needed",
		"mqplan report --out json=- now.json | jq .verdict",
	},
	"find-max": {
		"mqplan find-max plans/1to1-qos1.yaml                             # the highest total rate of group pub that passes",
		"mqplan find-max --broker mqtt://127.0.0.1:1883 --budget 5m --out html=findmax.html plans/1to1-qos1.yaml",
		"mqplan find-max --knob groups.sub.count --from 100 --trial-duration 20s plans/fanout-qos0.yaml",
	},
	"merge": {
		"mqplan merge --token-file token part-*.json                       # the table and exit code one process would have given; every part's signature checked",
		"mqplan merge --token-file token --out json=merged.json --out junit=junit.xml mqplan-part-*-of-8.json",
		"mqplan merge --token-file token --allow-missing part-*.json       # what the parts there measured, INCOMPLETE (exit 3)",
		"mqplan merge --insecure-parts mqplan-part-0-of-1.json             # unsigned parts (a run without a token): merged, said to be unauthenticated",
	},
	"compare": {
		"mqplan compare last-release.json now.json",
		"mqplan compare --tolerance 10% --fail-on-regression last-release.json now.json   # exit 1 when worse",
		"mqplan compare --out json=comparison.json last-release.json now.json",
	},
}

// chooseProcs sets the CPUs a run may use (see generatorProcs): --procs
// when given (flag > 0), else what the broker's place leaves.
func (e *env) chooseProcs(flag int, b plans.Broker) {
	v, _ := e.lookupEnv("GOMAXPROCS")
	e.setProcs(generatorProcs(flag, b, runtime.NumCPU(), v != ""))
}

// oneArg insists on exactly one plan argument.
func oneArg(fs *flag.FlagSet, args []string) (string, error) {
	if len(args) != 1 {
		if len(args) == 0 {
			return "", cmdLineError(fs.Name(), errors.New("expected one plan file, got none"))
		}
		return "", cmdLineError(fs.Name(), fmt.Errorf("expected one plan file, got %d arguments: %s", len(args), strings.Join(args, " ")))
	}
	return args[0], nil
}

func cmdRun(e *env, args []string) (retErr error) {
	fs := newFlags(e, "run", "[flags] PLAN", "Runs the plan, prints the report and exits 0 (pass), 1 (a threshold failed),\n2 (invalid plan), 3 (the run could not complete) or 4 (inconclusive: only latency\nthresholds failed, and mqplan itself was short of CPU).")
	var pf planFlags
	pf.register(fs)
	var outs outputs
	fs.Var(&outs, "out", "write the result as FORMAT to FILE (- for standard output); repeatable. Formats:\n"+report.FormatHelp())
	fs.Var(jsonFlag{&outs}, "json", "write the full result as JSON to this file (the same as --out json=FILE)")
	fs.Var(labelFlag{&outs}, "label", labelHelp)
	quiet := fs.Bool("quiet", false, "no live progress on stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the run to this file (to see where mqplan's own time goes)")
	procs := fs.Int("procs", 0, "CPUs mqplan may use (default: all, or half when the broker is another process on this machine)")
	baselineFile := fs.String("baseline", "", "a saved JSON result (--out json=FILE of an earlier run) that thresholds read as baseline.*, e.g. p99 <= baseline.p99 * 1.10")
	metricsListen := fs.String("metrics-listen", "", "serve live Prometheus metrics on http://ADDR/metrics while the run goes, e.g. :9464 (a bare :PORT is 127.0.0.1:PORT)")
	metricsPush := fs.String("metrics-push", "", "also push the live Prometheus metrics to this remote-write URL (e.g. http://127.0.0.1:9090/api/v1/write) while the run goes and once after the report; user:password@ in it is sent as basic authentication")
	metricsPushInterval := fs.Duration("metrics-push-interval", 5*time.Second, fmt.Sprintf("with --metrics-push, push this often (%v to %v)", minPushInterval, maxPushInterval))
	metricsLinger := fs.Duration("metrics-linger", 0, fmt.Sprintf("with --metrics-listen, keep serving the final metrics this long after the report (at most %v), so that a scraper's next scrape sees them; Ctrl-C ends the wait", maxMetricsLinger))
	partialFile := fs.String("partial", "", "also write the run's partial result (raw counters and histograms) to this file, for mqplan merge")
	var sf shardFlags
	sf.register(fs)
	raw := args
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	path, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	if sf.workers != "" && (*metricsListen != "" || *metricsPush != "") {
		// Each worker is a --shard, which has no live metrics: refused
		// here, before any worker starts and waits for the others.
		return invalid(errors.New("--workers with --metrics-listen or --metrics-push: not supported yet (the workers are shards, and a shard has no live metrics)"))
	}
	if sf.workers != "" {
		return runWorkers(e, &sf, &pf, path, raw, &outs, *procs, *quiet)
	}
	if sf.shard != "" {
		// A shard of a run split across processes (sharded.go).
		sr, err := prepareShard(e, &sf, &pf, path, *partialFile, map[string]bool{"baseline": *baselineFile != "",
			"metrics-listen": *metricsListen != "", "metrics-push": *metricsPush != "", "cpuprofile": *cpuProfile != ""})
		if err != nil {
			return err
		}
		if err := outs.check(input{path, "the plan"}, input{sr.part.path, "--partial " + sr.part.path}); err != nil {
			return err
		}
		e.chooseProcs(*procs, sr.prog.Plan.Broker)
		return runShard(e, &sf, sr, &outs, *quiet)
	}
	if sf.sources != "" {
		return invalid(errors.New("--source-addresses: only with --shard (a run in one process binds the plan's broker.source_addresses)"))
	}
	// The run's id makes its default client ids unique and labels its
	// live metrics (run_id).
	runID := newRunID()
	prog, part, err := sf.loadOneProcess(e, &pf, path, runID, *partialFile)
	if err != nil {
		return err
	}
	if *procs < 0 {
		return invalid(fmt.Errorf("--procs must be at least 1, got %d", *procs))
	}
	if err := fitsOneProcess(prog, systemLimits()); err != nil {
		return err
	}
	if err := checkLinger(*metricsLinger, *metricsListen); err != nil {
		return err
	}
	// Output names are checked before anything connects: a typo in a
	// directory must not cost a whole run.
	if err := outs.check(input{path, "the plan"}, input{*baselineFile, "--baseline " + *baselineFile},
		input{*cpuProfile, "--cpuprofile " + *cpuProfile}, input{*partialFile, "--partial " + *partialFile}); err != nil {
		return err
	}
	baselineSet, intervalSet := false, false
	fs.Visit(func(f *flag.Flag) {
		baselineSet = baselineSet || f.Name == "baseline"
		intervalSet = intervalSet || f.Name == "metrics-push-interval"
	})
	if intervalSet && *metricsPush == "" {
		return invalid(fmt.Errorf("--metrics-push-interval %v: there is nothing to push without --metrics-push", *metricsPushInterval))
	}
	if baselineSet && *baselineFile == "" {
		return invalid(errors.New("--baseline: want a saved result's file name, got an empty one"))
	}
	// The baseline is read before anything connects: a wrong file must
	// not cost a whole run.
	var base *report.Baseline
	if *baselineFile != "" {
		if base, err = readBaseline(e, *baselineFile); err != nil {
			return err
		}
	}
	// The metrics endpoint binds before anything connects: a port in use
	// must not cost a whole run. It stops after the report (deferred).
	var exporter *live.Exporter
	if *metricsListen != "" || *metricsPush != "" {
		var stopMetrics func()
		if exporter, stopMetrics, err = startMetrics(e, prog, *metricsListen, *quiet, liveInfo(prog, path, runID)); err != nil {
			return err
		}
		defer stopMetrics()
	}
	push, err := startPush(e, exporter, *metricsPush, *metricsPushInterval)
	if err != nil {
		return err
	}
	defer push.stop()
	if push != nil && !*quiet {
		fmt.Fprintf(e.stderr, "mqplan: pushing Prometheus metrics (run_id %s) to %s every %v and at the end\n", runID, push.p.URL(), *metricsPushInterval)
	}
	e.chooseProcs(*procs, prog.Plan.Broker)
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return invalid(err)
		}
		defer func() {
			// A profile that could not be written makes the run
			// incomplete whatever its verdict: it was asked for.
			if perr := stopProfile(); perr != nil && (retErr == nil || isVerdict(retErr)) {
				retErr = incomplete(perr)
			}
		}()
	}

	// First signal: stop publishing, drain briefly, report. Second: leave now.
	ctx, stopSigs := onSignals(e, "interrupted: stopping and reporting what was measured", nil)
	stop := sync.OnceFunc(stopSigs) // lingerMetrics releases them early
	defer stop()

	opts := runOptions(prog)
	var prog_ *progressPrinter
	if !*quiet {
		prog_ = newProgressPrinter(e.stderr, prog)
		opts.Progress = prog_.print
	}
	hookMetrics(&opts, exporter)
	if part != nil {
		part.hook(&opts)
	}
	st, err := runner.Run(ctx, prog, opts)
	if prog_ != nil {
		prog_.finish()
	}
	if err != nil {
		return incomplete(err)
	}
	// The partial is written first: it is the raw data, and a report
	// that cannot be written must not cost it.
	var partErr error
	if part != nil {
		partErr = part.write(st)
	}
	res := report.EvaluateWithBaseline(prog.Plan, prog.Thresholds, st, base)
	stampRun(res)
	res.CommandLine = commandLine("run", raw)
	if exporter != nil {
		exporter.Finish(liveFinal(st, res))
	}
	if err := outs.report(e, res); err != nil {
		return err
	}
	if partErr != nil {
		return incomplete(partErr)
	}
	if err := push.final(); err != nil {
		return incomplete(err)
	}
	if exporter != nil && *metricsLinger > 0 {
		lingerMetrics(e, *metricsLinger, *quiet, stop)
	}
	return verdict(res)
}

// maxMetricsLinger bounds --metrics-linger: long enough for any scrape
// interval (Prometheus' default is a minute), short enough that a typo
// does not leave a CI job hanging for hours.
const maxMetricsLinger = 10 * time.Minute

// checkLinger refuses a --metrics-linger out of bounds, or without an
// endpoint to keep serving.
func checkLinger(d time.Duration, listen string) error {
	switch {
	case d < 0:
		return invalid(fmt.Errorf("--metrics-linger %v: a duration of 0 or more, e.g. 30s", d))
	case d > maxMetricsLinger:
		return invalid(fmt.Errorf("--metrics-linger %v: at most %v", d, maxMetricsLinger))
	case d > 0 && listen == "":
		return invalid(fmt.Errorf("--metrics-linger %v: there is no endpoint to keep serving without --metrics-listen", d))
	}
	return nil
}

// lingerMetrics keeps the process (and so the metrics endpoint, closed
// when cmdRun returns) alive for d after the report, so that a scraper
// whose interval is longer than the run's last second still collects
// the final figures. A stop signal ends the wait at once, whether or not
// one already interrupted the run: the report is written, so nothing is
// lost, and the exit code stays the run's. releaseRun releases the run's
// own signal handling (idempotent), after the wait's is in place, so
// that no signal meanwhile falls to the default action.
func lingerMetrics(e *env, d time.Duration, quiet bool, releaseRun func()) {
	sigs := make(chan os.Signal, 1)
	e.notify(sigs, stopSignals...)
	defer e.stopNotify(sigs)
	releaseRun()
	if !quiet {
		fmt.Fprintf(e.stderr, "mqplan: serving the final metrics for %v more (Ctrl-C ends the wait)\n", d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-sigs:
	}
}

// writeTable writes the summary table to w, its verdicts coloured when w
// is a terminal that takes colour (see env.colour).
func writeTable(e *env, w io.Writer, res *report.Result) error {
	var b bytes.Buffer
	if err := report.WriteTable(&b, res); err != nil {
		return err
	}
	out := b.Bytes()
	if e.colour(w) {
		out = colourVerdicts(out)
	}
	_, err := w.Write(out)
	return err
}

// startCPUProfile starts the --cpuprofile profile, written like every
// output file (see internal/outfile): a regular file appears whole when
// the profile stops, a FIFO or device is written through. stop ends the
// profile and reports a write error (pprof itself drops them).
func startCPUProfile(path string) (stop func() error, err error) {
	if outfile.IsStdout(path) {
		// Binary, and standard output carries the report.
		return nil, fmt.Errorf("--cpuprofile %s: the profile is binary and standard output carries the report: name a file", path)
	}
	f, err := outfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Abort()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Commit(); err != nil {
			return fmt.Errorf("--cpuprofile %s: %w", path, err)
		}
		return nil
	}, nil
}

// verdict is a reported result as the command's error: errIncomplete
// (exit 3) when the run did not complete, errFailed (exit 1) when a
// threshold failed, errInconclusive (exit 4) when the only failures are
// latency that mqplan's own disturbance explains, else nil (exit 0).
func verdict(res *report.Result) error {
	switch res.Verdict() {
	case report.VerdictIncomplete:
		return errIncomplete
	case report.VerdictFail:
		return errFailed
	case report.VerdictInconclusive:
		return errInconclusive
	}
	return nil
}

// generatorProcs chooses how many CPUs the run may use. A broker that is
// another process on this machine (a loopback URL) competes with mqplan
// for the same cores; measured here with Mosquitto at 20k msg/s on 2 cores,
// letting mqplan take both made both processes slower (p50 latency 2.9 s
// against 0.14 s with one core each) and cost more CPU per message. So by
// default mqplan leaves half the cores to such a broker. The embedded
// broker runs inside mqplan and a remote one elsewhere: they get all cores.
// An explicit --procs or GOMAXPROCS wins.
func generatorProcs(flag int, b plans.Broker, cpus int, envSet bool) int {
	switch {
	case flag > 0:
		return flag
	case envSet:
		return runtime.GOMAXPROCS(0)
	case !b.IsEmbedded() && allLoopback(b.URLs):
		return max(1, cpus/2)
	}
	return cpus
}

// allLoopback reports whether every broker URL names this machine.
func allLoopback(urls []string) bool {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return false
		}
		h := u.Hostname()
		if h == "localhost" {
			continue
		}
		ip := net.ParseIP(h)
		if ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return len(urls) > 0
}

// stopSignals are the signals that stop a run: Ctrl-C, kill, and SIGHUP,
// which a closed terminal or SSH session sends; left to its default,
// SIGHUP would kill mqplan without the report of what was measured.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// onSignals returns a context cancelled by the first of stopSignals
// (after saying what happens, and calling first if set); a second signal
// exits at once with code 3, without a report. stop releases the signals.
func onSignals(e *env, what string, first func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	e.notify(sigs, stopSignals...)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		if first != nil {
			first()
		}
		fmt.Fprintf(e.stderr, "\nmqplan: %s (press Ctrl-C again to exit now)\n", what)
		cancel()
		if _, ok := <-sigs; ok {
			fmt.Fprintln(e.stderr, "mqplan: interrupted again: exiting without a report")
			e.exit(exitIncomplete)
		}
	}()
	return ctx, func() { e.stopNotify(sigs); close(sigs); cancel() }
}

// newRunID returns a short random id that makes default client ids unique
// per run.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func cmdValidate(e *env, args []string) error {
	fs := newFlags(e, "validate", "PLAN...", "Checks each plan (syntax, fields, templates, topics, thresholds) without connecting.\nPrints every error as file:line:col: path: message and exits 2 if any plan is invalid.")
	var sets stringList
	fs.Var(&sets, "set", "override a plan value before validating (repeatable)")
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	if len(args) == 0 {
		return cmdLineError(fs.Name(), errors.New("expected at least one plan file"))
	}
	bad := 0
	for _, path := range args {
		plan, err := plans.Load(path, e.loadOptions(sets))
		if err == nil {
			_, err = plans.Compile(plan, plans.CompileOptions{})
		}
		if err != nil {
			bad++
			fmt.Fprintln(e.stderr, errText(err))
			continue
		}
		fmt.Fprintf(e.stdout, "%s: ok (%s)\n", path, plan.Name)
	}
	if bad > 0 {
		return invalid(fmt.Errorf("%d of %d plans invalid", bad, len(args)))
	}
	return nil
}

func cmdExplain(e *env, args []string) error {
	fs := newFlags(e, "explain", "[flags] PLAN", "Prints the compiled plan: phases, connections and messages per second, expected\ndeliveries, bandwidth, and the file descriptors and local ports the run needs.")
	var pf planFlags
	pf.register(fs)
	var shards shardsFlag
	fs.Var(&shards, "shards", fmt.Sprintf("also show the plan split over `N` processes (1 to %d): each shard's clients, rates, fds and ports, the deliveries across shards, the assignment's hash", plans.MaxShards))
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	path, err := oneArg(fs, args)
	if err != nil {
		return err
	}
	prog, err := pf.load(e, path, "<run>")
	if err != nil {
		return err
	}
	limits := systemLimits()
	if err := report.WriteExplain(e.stdout, prog, limits); err != nil {
		return incomplete(err)
	}
	if shards == 0 {
		return nil
	}
	a, err := plans.Assign(prog, int(shards))
	if err != nil {
		return invalid(err)
	}
	if err := report.WriteShards(e.stdout, prog, a, limits); err != nil {
		return incomplete(err)
	}
	return nil
}

func cmdBroker(e *env, args []string) error {
	fs := newFlags(e, "broker", "[flags]", "Runs the embedded MQTT broker (mochi-mqtt) until Ctrl-C, for self-tests and demos.")
	listen := fs.String("listen", "127.0.0.1:1883", "TCP address to listen on")
	dropEvery := fs.Int("drop-every", 0, "fault injection: drop every N-th delivery (0 = off)")
	dupEvery := fs.Int("duplicate-every", 0, "fault injection: deliver every N-th message twice (0 = off)")
	delay := fs.Duration("delay", 0, "fault injection: delay every delivery by this much")
	tlsCert := fs.String("tls-cert", "", "serve TLS with this certificate (PEM); needs --tls-key")
	tlsKey := fs.String("tls-key", "", "the private key of --tls-cert (PEM)")
	tlsCA := fs.String("tls-ca", "", "require client certificates signed by this CA (mutual TLS)")
	wsAddr := fs.String("ws", "", "also listen for MQTT over WebSocket on this address (TLS too when --tls-cert is set)")
	authFile := fs.String("auth", "", "require user names and passwords from this file, one user:password a line")
	sysEvery := fs.Duration("sys-interval", time.Second, "refresh the $SYS topics this often (whole seconds, 1s to 1h), for plans with broker.metrics.sys")
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	if len(args) != 0 {
		return cmdLineError(fs.Name(), fmt.Errorf("unexpected arguments: %s", strings.Join(args, " ")))
	}
	if *dropEvery < 0 || *dupEvery < 0 || *delay < 0 {
		return invalid(errors.New("fault options must not be negative"))
	}
	if *sysEvery < time.Second || *sysEvery > time.Hour || *sysEvery%time.Second != 0 {
		return invalid(fmt.Errorf("--sys-interval %s: must be whole seconds from 1s to 1h", *sysEvery))
	}
	opts := broker.Options{
		Listen: *listen,
		// Every second by default, unlike the embedded broker of a run:
		// this broker is its own process, so the refresh's stop of the
		// world does not land in the process measuring latency, and a plan
		// reading $SYS gets per-second figures and an update soon after its
		// drain.
		SysInterval: *sysEvery,
		Faults:      broker.Faults{DropEvery: *dropEvery, DuplicateEvery: *dupEvery, Delay: *delay},
		WebSocket:   *wsAddr,
	}
	if opts.TLS, err = brokerTLS(*tlsCert, *tlsKey, *tlsCA); err != nil {
		return invalid(err)
	}
	if *authFile != "" {
		if opts.Users, err = readUsers(*authFile); err != nil {
			return invalid(err)
		}
		if len(opts.Users) == 0 {
			// Not an error (a user may fill the file later and restart),
			// but nobody could connect, which is a puzzling demo.
			fmt.Fprintf(e.stderr, "mqplan: warning: --auth %s lists no users (one user:password a line): every client will be refused\n", *authFile)
		}
	}
	// Signals are caught before the broker says it listens: whoever
	// reads that line may stop it at once.
	sigs := make(chan os.Signal, 1)
	e.notify(sigs, stopSignals...)
	defer e.stopNotify(sigs)
	b, err := broker.Start(opts)
	if err != nil {
		// It fails on what the options say: an address that does not
		// parse or cannot be listened on (taken, privileged).
		return invalid(err)
	}
	fmt.Fprintf(e.stderr, "mqplan broker listening on %s (Ctrl-C to stop)\n", b.URL())
	if ws := b.WebSocketURL(); ws != "" {
		fmt.Fprintf(e.stderr, "mqplan broker listening on %s\n", ws)
	}
	<-sigs
	e.stopNotify(sigs)
	st := b.Stats()
	fmt.Fprintf(e.stderr, "mqplan broker: received %d, sent %d, dropped %d (queue) + %d (inflight)\n",
		st.MessagesReceived, st.MessagesSent, st.MessagesDropped, st.InflightDropped)
	if err := b.Close(5 * time.Second); err != nil {
		return incomplete(err)
	}
	return nil
}

// startEmbedded starts the in-process broker of a plan whose broker is
// "embedded": on a free loopback port, with no faults.
func startEmbedded() (runner.EmbeddedBroker, error) {
	b, err := broker.Start(broker.Options{})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// brokerTLS loads the embedded broker's certificate, and the client CA
// that turns on mutual TLS.
func brokerTLS(cert, key, ca string) (*tls.Config, error) {
	if cert == "" && key == "" {
		if ca != "" {
			return nil, errors.New("--tls-ca needs --tls-cert and --tls-key")
		}
		return nil, nil
	}
	if cert == "" || key == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--tls-ca: %s holds no PEM certificate", ca)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// readUsers reads an --auth file: one user:password a line; blank lines
// and lines starting with # are skipped.
func readUsers(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--auth: %w", err)
	}
	users := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, p, ok := strings.Cut(line, ":")
		if !ok || u == "" {
			return nil, fmt.Errorf("--auth: %s:%d: want user:password", path, i+1)
		}
		users[u] = p
	}
	return users, nil
}

// progressPrinter writes the live progress line to standard error:
// rewritten in place on a terminal, one line a second otherwise (CI logs,
// a test's buffer).
type progressPrinter struct {
	out     io.Writer
	tty     bool
	planned time.Duration
	last    int
}

func newProgressPrinter(w io.Writer, prog *plans.Program) *progressPrinter {
	p := &progressPrinter{out: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	for _, ph := range prog.Phases {
		p.planned += ph.Length
	}
	return p
}

func (p *progressPrinter) print(pr runner.Progress) {
	p99 := "-"
	if pr.P99 > 0 {
		p99 = pr.P99.Round(10 * time.Microsecond).String()
	}
	line := fmt.Sprintf("[%-10s %5.0fs/%.0fs] connected %d/%d  clients lost %d  send %.0f/s  recv %.0f/s  p99 %s  errors %d",
		pr.Phase, pr.Elapsed.Seconds(), p.planned.Seconds(), pr.Connected, pr.Clients, pr.Lost, pr.SendRate, pr.RecvRate, p99, pr.Errors)
	if p.tty {
		pad := ""
		if n := p.last - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(p.out, "\r%s%s", line, pad)
		p.last = len(line)
		return
	}
	fmt.Fprintln(p.out, line)
}

func (p *progressPrinter) finish() {
	if p.tty && p.last > 0 {
		fmt.Fprintln(p.out)
	}
}
