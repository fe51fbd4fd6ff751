package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/mqplan/mqplan/report"
)

// errRegression is compare's verdict with --fail-on-regression when a
// change is worse than the tolerance (exit 1); the table has said which.
var errRegression = &exitError{code: exitFail, err: fmt.Errorf("a change is worse than the tolerance: %w", errReported)}

// readResult reads a saved JSON result ("-": standard input). Any problem
// with it is a bad file (exit 2), named in the error.
func readResult(e *env, path string) (*report.Result, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, invalid(err)
		}
		defer f.Close()
		r = f
	}
	res, err := report.ReadJSON(r)
	if err != nil {
		name := path
		if path == "-" {
			name = "standard input"
		}
		return nil, invalid(fmt.Errorf("%s: %w", name, err))
	}
	return res, nil
}

func cmdReport(e *env, args []string) error {
	fs := newFlags(e, "report", "[flags] RESULT.json",
		"Re-renders a result saved with mqplan run --out json=FILE, without a broker: the table on\n"+
			"standard output, or the --out formats. Exits with the saved verdict's code: 0 pass,\n"+
			"1 a threshold failed, 3 the run was incomplete; 2 for a file that is not a result\n"+
			"this mqplan reads.")
	var outs outputs
	fs.Var(&outs, "out", "write the result as FORMAT to FILE (- for standard output); repeatable. Formats:\n"+report.FormatHelp())
	fs.Var(labelFlag{&outs}, "label", "give the result this label in every output (see mqplan run --label), in place of the one it was saved with")
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	if len(args) != 1 {
		return cmdLineError(fs.Name(), fmt.Errorf("expected one saved result, got %d arguments", len(args)))
	}
	if err := outs.check(input{args[0], "the saved result"}); err != nil {
		return err
	}
	res, err := readResult(e, args[0])
	if err != nil {
		return err
	}
	outs.stamp(res)
	if len(outs.list) == 0 {
		if err := writeTable(e, e.stdout, res); err != nil {
			return incomplete(fmt.Errorf("write report: %w", err))
		}
	} else if err := outs.write(e, res); err != nil {
		return incomplete(err)
	}
	return verdict(res)
}

// compareOut is compare's repeatable --out FORMAT=FILE, in the
// comparison's formats.
type compareOut struct {
	list []struct {
		format report.CompareFormat
		path   string
	}
}

func (o *compareOut) String() string { return "" }

func (o *compareOut) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want FORMAT=FILE (FORMAT one of %s; FILE - for standard output), got %q", report.CompareFormatNames(), v)
	}
	f, ok := report.LookupCompareFormat(name)
	if !ok {
		return fmt.Errorf("unknown format %q: want one of %s", name, report.CompareFormatNames())
	}
	o.list = append(o.list, struct {
		format report.CompareFormat
		path   string
	}{f, path})
	return nil
}

// outputs binds the comparison to each output, so that they are checked
// and written as run's are (see outputs).
func (o *compareOut) outputs(c *report.Comparison) *outputs {
	var outs outputs
	for _, out := range o.list {
		write := out.format.Write
		outs.list = append(outs.list, output{
			format: report.Format{Name: out.format.Name, Write: func(w io.Writer, _ *report.Result) error { return write(w, c) }},
			path:   out.path,
			flag:   "--out " + out.format.Name + "=" + out.path,
		})
	}
	return &outs
}

// markWord finds the comparison's marks and the verdicts of its header.
var markWord = regexp.MustCompile(`\b(WORSE|better|PASS|FAIL|INCOMPLETE)\b`)

// writeComparison writes the comparison table to w, its marks coloured
// (WORSE red, better green, as the verdicts) when w is a terminal that
// takes colour (see env.colour).
func writeComparison(e *env, w io.Writer, c *report.Comparison) error {
	var b bytes.Buffer
	if err := report.WriteComparison(&b, c); err != nil {
		return err
	}
	out := b.Bytes()
	if e.colour(w) {
		out = markWord.ReplaceAllFunc(out, func(m []byte) []byte {
			c := sgrYellow
			switch string(m) {
			case "better", "PASS":
				c = sgrGreen
			case "WORSE", "FAIL":
				c = sgrRed
			}
			return append(append([]byte(c), m...), sgrReset...)
		})
	}
	_, err := w.Write(out)
	return err
}

// parseTolerance reads --tolerance: a percentage such as 5% or 2.5%.
func parseTolerance(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("--tolerance %q: write a percentage, such as 5%%", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f >= 0 && f/100 <= report.MaxTolerance) { // NaN too
		return 0, fmt.Errorf("--tolerance %q: want a percentage from 0%% to %g%%", s, report.MaxTolerance*100)
	}
	return f / 100, nil
}

func cmdCompare(e *env, args []string) error {
	fs := newFlags(e, "compare", "[flags] A.json B.json",
		"Compares two results saved with mqplan run --out json=FILE: the key metrics of B beside A's,\n"+
			"in total and per group, with the change, marking changes beyond the tolerance WORSE\n"+
			"(higher latency, loss, duplicates or errors, lower rates) or better. Exits 0, or with\n"+
			"--fail-on-regression 1 when a change is WORSE; 2 for a file it cannot read.")
	tolerance := fs.String("tolerance", "5%", "the change, as a percentage, within which a metric is not marked")
	failOn := fs.Bool("fail-on-regression", false, "exit 1 when a change is WORSE than the tolerance")
	var outs compareOut
	fs.Var(&outs, "out", "also write the comparison as FORMAT to FILE (- for standard output); repeatable. Formats:\n"+report.CompareFormatHelp())
	args, done, err := parseFlags(fs, args)
	if done {
		return err
	}
	if len(args) != 2 {
		return cmdLineError(fs.Name(), fmt.Errorf("expected two saved results, A and B, got %d arguments", len(args)))
	}
	if args[0] == "-" && args[1] == "-" {
		return invalid(errors.New("A and B cannot both be standard input"))
	}
	tol, err := parseTolerance(*tolerance)
	if err != nil {
		return invalid(err)
	}
	// The outputs are checked before the files are read, as run checks
	// them before it connects; the comparison they write comes after.
	if err := outs.outputs(nil).check(input{args[0], "A"}, input{args[1], "B"}); err != nil {
		return err
	}
	a, err := readResult(e, args[0])
	if err != nil {
		return err
	}
	b, err := readResult(e, args[1])
	if err != nil {
		return err
	}
	c := report.Compare(a, b, args[0], args[1], tol)
	written := outs.outputs(c)
	tableOut := e.stdout
	if written.toStdout() {
		tableOut = e.stderr
	}
	if err := writeComparison(e, tableOut, c); err != nil {
		return incomplete(fmt.Errorf("write comparison: %w", err))
	}
	if err := written.write(e, nil); err != nil {
		return incomplete(err)
	}
	if *failOn && len(c.Worse()) > 0 {
		return errRegression
	}
	return nil
}
