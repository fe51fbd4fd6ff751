package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mqplan/mqplan/internal/outfile"
	"github.com/mqplan/mqplan/report"
)

// output is one --out FORMAT=FILE (or --json FILE).
type output struct {
	format report.Format
	path   string
	// flag is how the user asked for it, for messages: "--out md=x.md".
	flag string
}

// outputs collects the repeatable --out flag; --json FILE adds to it too,
// as --out json=FILE.
type outputs struct {
	list []output
	// label is --label NAME, "" when not given (see stamp).
	label string
}

// String is for the flag package's default-value display.
func (o *outputs) String() string { return "" }

// Set parses one --out FORMAT=FILE.
func (o *outputs) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want FORMAT=FILE (FORMAT one of %s; FILE - for standard output), got %q", report.FormatNames(), v)
	}
	f, ok := report.LookupFormat(name)
	if !ok {
		return fmt.Errorf("unknown format %q: want one of %s", name, report.FormatNames())
	}
	o.list = append(o.list, output{format: f, path: path, flag: "--out " + v})
	return nil
}

// jsonFlag is --json FILE: --out json=FILE under its older name.
type jsonFlag struct{ o *outputs }

func (j jsonFlag) String() string { return "" }

func (j jsonFlag) Set(path string) error {
	if path == "" {
		return errors.New("want a file name (- for standard output)")
	}
	f, _ := report.LookupFormat("json")
	j.o.list = append(j.o.list, output{format: f, path: path, flag: "--json " + path})
	return nil
}

// input is a file a command reads (a plan, a saved result, a baseline)
// or writes outside the outputs (a profile), which no output may name.
type input struct {
	path string
	// flag is how the user named it, for messages: "the plan",
	// "--baseline b.json".
	flag string
}

// check refuses, before anything connects, outputs that cannot be
// written: a directory that does not exist, two outputs to one file, two
// to standard output (their bytes would interleave), or an output over a
// file the command reads or writes otherwise (a typo must not replace the
// plan or the saved result it came from). Files are told apart by what
// they are, not how they are written: ./a.json, an absolute path and a
// symbolic link to a.json are one file.
func (o *outputs) check(others ...input) error {
	var seen []input
	stdout := ""
	for _, out := range o.list {
		if outfile.IsStdout(out.path) {
			if stdout != "" {
				return invalid(fmt.Errorf("%s and %s both write to standard output: give one of them a file", stdout, out.flag))
			}
			stdout = out.flag
			continue
		}
		for _, prev := range seen {
			if sameFile(prev.path, out.path) {
				return invalid(fmt.Errorf("%s and %s write the same file", prev.flag, out.flag))
			}
		}
		for _, in := range others {
			if in.path != "" && !outfile.IsStdout(in.path) && in.path != "-" && sameFile(in.path, out.path) {
				return invalid(fmt.Errorf("%s would replace %s (%s): write it to another file", out.flag, in.flag, in.path))
			}
		}
		seen = append(seen, input{path: out.path, flag: out.flag})
		if err := outfile.Check(out.path); err != nil {
			return invalid(fmt.Errorf("%s: %w", out.flag, err))
		}
	}
	return nil
}

// sameFile reports whether two names are one file: the same file on disk
// when both exist (links, ./ and absolute paths included), else the same
// cleaned absolute path.
func sameFile(a, b string) bool {
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil {
			return os.SameFile(sa, sb)
		}
	}
	aa, errA := filepath.Abs(a)
	ab, errB := filepath.Abs(b)
	return errA == nil && errB == nil && aa == ab
}

// toStdout reports whether an output owns standard output, in which case
// the summary table goes to standard error so that the output can be
// piped (to jq, say).
func (o *outputs) toStdout() bool {
	for _, out := range o.list {
		if outfile.IsStdout(out.path) {
			return true
		}
	}
	return false
}

// report presents a judged result as mqplan run and merge do: the table
// (on standard output, or standard error when an output owns standard
// output so that it can be piped to jq), the GitHub step summary, then
// every output. An error is the command's (exit 3); the verdict is the
// caller's to return.
func (o *outputs) report(e *env, res *report.Result) error {
	o.stamp(res)
	tableOut := e.stdout
	if o.toStdout() {
		tableOut = e.stderr
	}
	if err := writeTable(e, tableOut, res); err != nil {
		return incomplete(fmt.Errorf("write report: %w", err))
	}
	// The step summary is GitHub's page, not an output the user named:
	// one that cannot be written is said, and the verdict stands.
	if err := appendStepSummary(e, res); err != nil {
		fmt.Fprintf(e.stderr, "mqplan: warning: %s\n", errText(err))
	}
	if err := o.write(e, res); err != nil {
		return incomplete(err)
	}
	return nil
}

// write writes every output, in the order given, each whole or not at
// all (see internal/outfile), and returns the first error; the others are
// still written, since each is what was measured.
func (o *outputs) write(e *env, res *report.Result) error {
	o.stamp(res)
	var first error
	for _, out := range o.list {
		if err := out.writeOne(e, res); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (out output) writeOne(e *env, res *report.Result) error {
	var b bytes.Buffer
	if err := out.format.Write(&b, res); err != nil {
		return fmt.Errorf("%s: %w", out.flag, err)
	}
	if outfile.IsStdout(out.path) {
		if _, err := e.stdout.Write(b.Bytes()); err != nil {
			return fmt.Errorf("%s: %w", out.flag, err)
		}
		return nil
	}
	if err := outfile.WriteFile(out.path, b.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", out.flag, err)
	}
	return nil
}

// stepSummaryVar names the file GitHub Actions gives each step for a
// Markdown summary shown on the run's page.
const stepSummaryVar = "GITHUB_STEP_SUMMARY"

// appendStepSummary appends the Markdown summary (report.WriteMarkdown)
// to the file GITHUB_STEP_SUMMARY names, when it is set: a workflow that
// runs mqplan shows the verdict, thresholds and chart on its page with no
// flag. It appends, as GitHub asks, since earlier commands of the step may
// have written their own summaries; the summary is written in one write,
// after the run, so it is whole or absent.
func appendStepSummary(e *env, res *report.Result) error {
	path, ok := e.lookupEnv(stepSummaryVar)
	if !ok || path == "" {
		return nil
	}
	var b bytes.Buffer
	if err := report.WriteMarkdown(&b, res); err != nil {
		return fmt.Errorf("%s: %w", stepSummaryVar, err)
	}
	// A blank line ends it, so that what a later command appends starts
	// a block of its own.
	b.WriteByte('\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("%s: %w", stepSummaryVar, err)
	}
	_, err = f.Write(b.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", stepSummaryVar, path, err)
	}
	return nil
}
