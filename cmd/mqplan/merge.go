package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/internal/outfile"
	"github.com/mqplan/mqplan/partial"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/report"
	"github.com/mqplan/mqplan/runner"
	"github.com/mqplan/mqplan/stats"
)

// cmdMerge merges the partial results of one run (mqplan run --partial,
// one per shard) and judges the merge as mqplan run judges a run: the
// same table, outputs and exit code (0, 1, or 3 for an incomplete run or
// a missing part; 2 for parts of different runs or a plan that resolves
// differently here).
func cmdMerge(e *env, args []string) error {
	fs := newFlags(e, "merge", "[flags] PART...", "Merges the partial results of one run (mqplan run --partial FILE, one per shard),\nprints the report and exits as the run would have: 0 (pass), 1 (a threshold failed),\n2 (parts of different runs), 3 (incomplete, or a shard's part missing) or 4 (inconclusive).")
	var outs outputs
	fs.Var(&outs, "out", "write the merged result as FORMAT to FILE (- for standard output); repeatable. Formats:\n"+report.FormatHelp())
	fs.Var(jsonFlag{&outs}, "json", "write the merged result as JSON to this file (the same as --out json=FILE)")
	fs.Var(labelFlag{&outs}, "label", labelHelp)
	allowMissing := fs.Bool("allow-missing", false, "merge what there is when shards' parts are missing: the report says INCOMPLETE (exit 3) with the figures it has")
	var tf tokenFlag
	tf.register(fs, "the file holding the run's token, which checks that every part was signed by the run's shards and not altered since")
	insecure := fs.Bool("insecure-parts", false, "merge parts whose signature is missing or does not hold (a run without a token writes unsigned parts): the output then says that the parts were not authenticated")
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	if len(args) == 0 {
		return cmdLineError(fs.Name(), errors.New("expected the partial result files of a run, got none"))
	}
	ins := make([]input, len(args))
	for i, a := range args {
		ins[i] = input{a, a}
	}
	if err := outs.check(ins...); err != nil {
		return err
	}
	tok, err := tf.load(e)
	if err != nil {
		return err
	}
	files := make([]*partial.File, 0, len(args))
	for _, path := range args {
		f, err := readPartial(path, tok, *insecure)
		if err != nil {
			return invalid(err)
		}
		files = append(files, f)
	}
	var notices []string
	if *insecure {
		const unauth = "--insecure-parts: the parts were not authenticated: anyone who could write them could have changed the figures"
		fmt.Fprintf(e.stderr, "mqplan: %s\n", unauth)
		notices = append(notices, unauth)
	}
	return judgeParts(e, files, *allowMissing, &outs, notices...)
}

// judgeParts merges a run's parts and judges the merge: the report, the
// outputs and the exit code of mqplan merge and of a sharded run's
// coordinator.
func judgeParts(e *env, files []*partial.File, allowMissing bool, outs *outputs, notices ...string) error {
	merged, err := mergeParts(files, allowMissing)
	if err != nil {
		return err
	}
	merged.Stats.Notices = append(merged.Stats.Notices, notices...)
	return verdictOf(e, merged, outs)
}

// mergeParts is partial.Merge with its errors given their exit codes.
func mergeParts(files []*partial.File, allowMissing bool) (*partial.Merged, error) {
	merged, err := partial.Merge(files, partial.Options{AllowMissing: allowMissing})
	var missing *partial.MissingError
	switch {
	case errors.As(err, &missing):
		return nil, incomplete(fmt.Errorf("%w (--allow-missing reports what the others measured)", err))
	case err != nil:
		return nil, invalid(err)
	}
	return merged, nil
}

// readPartial reads one partial result file, bounded (partial.MaxSize),
// and checks its signature under the run's token (tok, nil for none)
// unless insecure: an unsigned part, an altered one or one signed with
// another token is refused, naming the file and which.
func readPartial(path string, tok *token, insecure bool) (*partial.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, partial.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > partial.MaxSize {
		return nil, fmt.Errorf("%s: larger than %d MiB, too large for a partial result", path, partial.MaxSize>>20)
	}
	if !insecure {
		if err := checkSignature(path, data, tok); err != nil {
			return nil, err
		}
	}
	return partial.Parse(path, data)
}

// checkSignature says why a part's signature does not hold under tok, or
// nil when it does.
func checkSignature(path string, data []byte, tok *token) error {
	const unchecked = "--insecure-parts merges it unauthenticated"
	if tok == nil {
		if partial.Signed(data) {
			return fmt.Errorf("%s: signed, and no token to check it: give the run's with --token-file FILE (or %s), or %s", path, envTokenFile, unchecked)
		}
		return fmt.Errorf("%s: unsigned (written by a run without a token): %s", path, unchecked)
	}
	if err := partial.Verify(path, data, tok.secret); err != nil {
		return fmt.Errorf("%w (checked with the token of %s; %s)", err, tok.from, unchecked)
	}
	return nil
}

// reloadPlan loads and compiles the plan the parts carry, with the run's
// id, and insists that it resolves here as it did in the run (the same
// thresholds and groups, and the same assignment of clients to the
// parts' shards when they name one): its ${VAR} references read this process's
// environment. A variable unset here reads as a placeholder, so that a
// password the merge does not need does not stop it; one the verdict
// depends on shows in the comparison.
func reloadPlan(e *env, m *partial.Merged) (*plans.Program, error) {
	ps := m.Plan
	lookup := func(name string) (string, bool) {
		if v, ok := e.lookupEnv(name); ok {
			return v, true
		}
		return "REDACTED", true
	}
	plan, err := plans.LoadBytes(ps.File, []byte(ps.Source), plans.LoadOptions{Sets: ps.Sets, LookupEnv: lookup})
	if err != nil {
		return nil, fmt.Errorf("the run's plan %s does not load here (set the environment variables it names as in the run): %w", ps.File, err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: m.RunID})
	if err != nil {
		return nil, fmt.Errorf("the run's plan %s does not compile here: %w", ps.File, err)
	}
	if a := m.Assignment; a.AssignSHA256 != "" {
		// The parts' clients were split by the assignment they name: the
		// plan must give that split here too, or they are not its parts.
		got, err := plans.Assign(prog, m.Count)
		if err != nil {
			return nil, fmt.Errorf("the run's plan %s: %w", ps.File, err)
		}
		if got.Version != a.Assignment || got.Hash != a.AssignSHA256 {
			return nil, fmt.Errorf("the parts were split by assignment %s %s, but the run's plan %s gives %s %s at %d shards here: they are not this plan's parts",
				a.Assignment, a.AssignSHA256, ps.File, got.Version, got.Hash, m.Count)
		}
	}
	th, groups := partial.Resolved(prog)
	if !slices.Equal(th, ps.Thresholds) || !slices.Equal(groups, ps.Groups) {
		return nil, fmt.Errorf("the run's plan %s resolves differently here than in the run (thresholds %q, groups %q here; %q, %q in the run): set the environment variables it names as in the run",
			ps.File, th, groups, ps.Thresholds, ps.Groups)
	}
	return prog, nil
}

// partialRun is what mqplan run --partial FILE needs: the plan's text as
// loaded, and the collector of the run's per-second histograms.
type partialRun struct {
	// tok signs the part, nil for an unsigned one.
	tok     *token
	path    string
	plan    partial.PlanSource
	runID   string
	seconds *partial.Collector
}

// loadForPartial reads the plan once (its text goes into the partial)
// and loads and compiles it as pf.load does.
func (pf *planFlags) loadForPartial(e *env, path, runID, out string) (*plans.Program, *partialRun, error) {
	// Checked before anything connects: a typo in a directory must not
	// cost a whole run. A shard may have no file ("": its part goes to
	// the coordinator only).
	if outfile.IsStdout(out) {
		return nil, nil, invalid(fmt.Errorf("--partial %s: standard output carries the report: name a file", out))
	}
	if err := outfile.Check(out); out != "" && err != nil {
		return nil, nil, invalid(fmt.Errorf("--partial %s: %w", out, err))
	}
	data, err := readPlanOnce(e, path)
	if err != nil {
		return nil, nil, invalid(err)
	}
	opts, err := pf.options(e)
	if err != nil {
		return nil, nil, err
	}
	sets := opts.Sets
	plan, err := plans.LoadBytes(path, data, opts)
	if err != nil {
		return nil, nil, invalid(err)
	}
	prog, err := plans.Compile(plan, plans.CompileOptions{RunID: runID})
	if err != nil {
		return nil, nil, invalid(err)
	}
	return prog, &partialRun{path: out, plan: partial.NewPlanSource(path, data, sets, prog), runID: runID, seconds: partial.NewCollector()}, nil
}

// hook chains the collector into the run's per-second hooks, after
// whatever else (the live metrics) observes them.
func (p *partialRun) hook(opts *runner.Options) {
	latency, second := opts.Latency, opts.Second
	opts.Latency = func(g int, h *hdrhistogram.Histogram) {
		if latency != nil {
			latency(g, h)
		}
		p.seconds.Latency(g, h)
	}
	opts.Second = func(s stats.Second) {
		if second != nil {
			second(s)
		}
		p.seconds.Second(s)
	}
}

// write writes the run's partial (a single process: shard 0 of 1).
func (p *partialRun) write(st *stats.Stats) error {
	f, err := p.file(st, partial.Shard{Index: 0, Count: 1}, partial.Clock{Source: partial.SingleProcess})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := p.encode(&b, f); err != nil {
		return fmt.Errorf("--partial %s: %w", p.path, err)
	}
	return p.save(b.Bytes())
}

// encode writes the part's document, signed with the run's token when
// there is one (partial.WriteSigned), unsigned otherwise.
func (p *partialRun) encode(w io.Writer, f *partial.File) error {
	if p.tok != nil {
		return partial.WriteSigned(w, f, p.tok.secret)
	}
	return partial.Write(w, f)
}

// file is the run's partial, as shard sh with clock c.
func (p *partialRun) file(st *stats.Stats, sh partial.Shard, c partial.Clock) (*partial.File, error) {
	f, err := partial.FromStats(st, p.seconds, partial.Meta{
		MqplanVersion: resultVersion(), RunID: p.runID, Plan: p.plan, Shard: sh, Clock: c,
	})
	if err != nil {
		return nil, fmt.Errorf("--partial %s: %w", p.path, err)
	}
	return f, nil
}

// save writes a partial's bytes to the --partial file.
func (p *partialRun) save(data []byte) error {
	if err := outfile.WriteFile(p.path, data); err != nil {
		return fmt.Errorf("--partial %s: %w", p.path, err)
	}
	return nil
}
