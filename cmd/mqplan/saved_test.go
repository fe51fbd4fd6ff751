package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqplan/mqplan/report"
)

// otherFormats are the --out formats besides json, each of which mqplan
// report must render from a saved result as the run rendered it.
var otherFormats = func() []string {
	var out []string
	for _, line := range strings.Split(report.FormatHelp(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "json" {
			out = append(out, f[0])
		}
	}
	return out
}()

// TestReportAndCompare saves two real runs (one passing, one failing) and
// re-renders and compares them: mqplan report prints the table the run
// printed and exits with its verdict; mqplan compare marks a worse change
// and gates on it only when asked; files it cannot read are exit 2.
func TestReportAndCompare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }

	if len(otherFormats) < 1 || otherFormats[0] != "table" {
		t.Fatalf("formats read from --help: %q, want table first", otherFormats)
	}
	runs := map[string]result{}
	for _, tc := range []struct {
		name string
		code int
	}{{"pass", 0}, {"fail", 1}} {
		args := []string{"run", "--quiet", "--out", "json=" + path(tc.name+".json")}
		// Every other format too, to compare with what report renders
		// from the saved JSON.
		for _, f := range otherFormats {
			args = append(args, "--out", f+"="+path(tc.name+"-run."+f))
		}
		r := runCmd(t, append(args, "testdata/cli/"+tc.name+".yaml")...)
		if r.code != tc.code {
			t.Fatalf("run %s: exit %d, want %d\n%s", tc.name, r.code, tc.code, r.stderr)
		}
		runs[tc.name] = r
	}
	// mqplan report writes every format from the saved result as the
	// run wrote it.
	for _, name := range []string{"pass", "fail"} {
		args := []string{"report"}
		for _, f := range otherFormats {
			args = append(args, "--out", f+"="+path(name+"-report."+f))
		}
		if r := runCmd(t, append(args, path(name+".json"))...); r.code != runs[name].code {
			t.Fatalf("report %s: exit %d, want %d\n%s", name, r.code, runs[name].code, r.stderr)
		}
		for _, f := range otherFormats {
			fromRun, err1 := os.ReadFile(path(name + "-run." + f))
			fromReport, err2 := os.ReadFile(path(name + "-report." + f))
			if err1 != nil || err2 != nil {
				t.Fatalf("%s %s: %v %v", name, f, err1, err2)
			}
			if !bytes.Equal(fromRun, fromReport) {
				t.Errorf("%s: --out %s from the saved result differs from the run's:\n%s\nwant:\n%s", name, f, fromReport, fromRun)
			}
		}
	}
	saved, err := os.ReadFile(path("pass.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		if err := os.WriteFile(path(name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	// slower.json is the passing run with half its receive rate.
	var doc map[string]any
	if err := json.Unmarshal(saved, &doc); err != nil {
		t.Fatal(err)
	}
	top := doc["metrics"].(map[string]any)["top"].(map[string]any)
	top["recv_rate"] = top["recv_rate"].(float64) / 2
	slowerJSON, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	slower := write("slower.json", string(slowerJSON))
	newer := write("newer.json", strings.Replace(string(saved), `"version": 1,`, `"version": 2,`, 1))

	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // the whole standard output, when set
		quiet  bool   // nothing on standard output
		has    []string
		stderr string // a substring of standard error
		file   string // a file that must then hold the saved pass.json
		opts   cmdOpts
	}{
		{name: "report: the run's table, exit 0", args: []string{"report", path("pass.json")}, code: 0, stdout: runs["pass"].stdout},
		{name: "report: a failed run's table, exit 1", args: []string{"report", path("fail.json")}, code: 1, stdout: runs["fail"].stdout},
		{name: "report from standard input", args: []string{"report", "-"}, stdin: string(saved), code: 0, stdout: runs["pass"].stdout},
		{name: "report --out json: the same bytes", args: []string{"report", "--out", "json=" + path("again.json"), path("pass.json")},
			code: 0, quiet: true, file: path("again.json")},
		{name: "report --out table=- after the file", args: []string{"report", path("pass.json"), "--out", "table=-"}, code: 0, stdout: runs["pass"].stdout},
		{name: "report: no file", args: []string{"report"}, code: 2, stderr: "expected one saved result, got 0 arguments"},
		{name: "report: a bad standard input", args: []string{"report", "-"}, stdin: "{}", code: 2,
			stderr: `mqplan: standard input: not an mqplan result: no "version" or "verdict" key`},
		{name: "report: a missing file", args: []string{"report", path("none.json")}, code: 2, stderr: "no such file"},
		{name: "report: a plan, not a result", args: []string{"report", "testdata/cli/pass.yaml"}, code: 2,
			stderr: "testdata/cli/pass.yaml: not an mqplan result"},
		{name: "report: a newer version", args: []string{"report", newer}, code: 2,
			stderr: newer + ": the result is JSON version 2, written by a newer mqplan; this mqplan reads version 1"},
		{name: "report: an unknown format", args: []string{"report", "--out", "pdf=x.pdf", path("pass.json")}, code: 2, stderr: `unknown format "pdf"`},
		{name: "report: an output into a missing directory", args: []string{"report", "--out", "json=" + path("no/x.json"), path("pass.json")},
			code: 2, stderr: "does not exist"},

		{name: "compare: a run with itself", args: []string{"compare", path("pass.json"), path("pass.json")}, code: 0,
			has: []string{"A: " + path("pass.json") + " | cli-pass |", "Group sub", "Group pub", "no change worse than 5%"}},
		{name: "compare: worse, not gated", args: []string{"compare", path("pass.json"), slower}, code: 0,
			has: []string{"| recv_rate   |", "-50% | WORSE |", "WORSE: 1 change beyond 5%: recv_rate -50%"}},
		{name: "compare: worse, gated", args: []string{"compare", "--fail-on-regression", path("pass.json"), slower}, code: 1,
			has: []string{"WORSE: 1 change beyond 5%: recv_rate -50%"}},
		{name: "compare: better, gated", args: []string{"compare", slower, path("pass.json"), "--fail-on-regression"}, code: 0,
			has: []string{"+100% | better |", "no change worse than 5%"}},
		{name: "compare: a wide tolerance", args: []string{"compare", "--tolerance", "60%", "--fail-on-regression", path("pass.json"), slower}, code: 0,
			has: []string{"no change worse than 60%"}},
		{name: "compare --out json=-: JSON on standard output", args: []string{"compare", "--out", "json=-", path("pass.json"), slower}, code: 0,
			has: []string{`"worse": [`, `"recv_rate -50%"`}, stderr: "WORSE: 1 change beyond 5%"},
		{name: "compare on a terminal: marks coloured", args: []string{"compare", path("pass.json"), slower}, code: 0, opts: cmdOpts{terminal: true},
			has: []string{sgrRed + "WORSE" + sgrReset + " |", "| " + sgrGreen + "PASS" + sgrReset}},
		{name: "compare on a terminal with NO_COLOR: plain", args: []string{"compare", path("pass.json"), slower}, code: 0,
			opts: cmdOpts{terminal: true, vars: map[string]string{"NO_COLOR": "1"}}, has: []string{"-50% | WORSE |"}},
		{name: "report on a terminal: verdicts coloured", args: []string{"report", path("fail.json")}, code: 1, opts: cmdOpts{terminal: true},
			has: []string{sgrRed + "FAIL" + sgrReset + ": "}},
		{name: "compare: a tolerance without %", args: []string{"compare", "--tolerance", "0.05", path("pass.json"), slower}, code: 2,
			stderr: `--tolerance "0.05": write a percentage, such as 5%`},
		{name: "compare: a negative tolerance", args: []string{"compare", "--tolerance", "-5%", path("pass.json"), slower}, code: 2,
			stderr: "want a percentage from 0% to 1000%"},
		{name: "compare: NaN% is no tolerance", args: []string{"compare", "--tolerance", "NaN%", path("pass.json"), slower}, code: 2,
			stderr: "want a percentage from 0% to 1000%"},
		{name: "compare: beyond 1000%", args: []string{"compare", "--tolerance", "1001%", path("pass.json"), slower}, code: 2,
			stderr: "want a percentage from 0% to 1000%"},
		{name: "compare: one file", args: []string{"compare", path("pass.json")}, code: 2, stderr: "expected two saved results, A and B, got 1"},
		{name: "compare: a bad B", args: []string{"compare", path("pass.json"), newer}, code: 2, stderr: newer + ": the result is JSON version 2"},
		{name: "compare: both from standard input", args: []string{"compare", "-", "-"}, code: 2, stderr: "cannot both be standard input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.stdin = strings.NewReader(tt.stdin)
			r := runCmdWith(t, opts, tt.args...)
			if !tt.opts.terminal || tt.opts.vars["NO_COLOR"] != "" {
				if strings.Contains(r.stdout+r.stderr, "\x1b[") {
					t.Errorf("colour codes where none may be:\n%q", r.stdout)
				}
			}
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if (tt.stdout != "" || tt.quiet) && r.stdout != tt.stdout {
				t.Errorf("standard output:\n%s\nwant:\n%s", r.stdout, tt.stdout)
			}
			for _, s := range tt.has {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("standard output lacks %q:\n%s", s, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("standard error lacks %q:\n%s", tt.stderr, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "hunter2-secret") {
				t.Errorf("a password in the output")
			}
			if tt.file != "" {
				got, err := os.ReadFile(tt.file)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, saved) {
					t.Errorf("%s differs from the saved result", tt.file)
				}
			}
		})
	}
}
