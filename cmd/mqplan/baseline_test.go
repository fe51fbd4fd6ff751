package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBaselineGate runs the "no worse than last release" gate end to end:
// a saved run is the baseline, thresholds read it as baseline.*, the table
// ends with the comparison, and a missing or broken baseline never passes.
func TestBaselineGate(t *testing.T) {
	t.Parallel()
	const plan = "testdata/cli/pass.yaml"
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	if r := runCmd(t, "run", "--quiet", "--out", "json="+base, plan); r.code != 0 {
		t.Fatalf("the baseline run: exit %d\n%s", r.code, r.stderr)
	}
	incomplete := filepath.Join(dir, "incomplete.json")
	if r := runCmd(t, "run", "--quiet", "--broker", "mqtt://127.0.0.1:1", "--out", "json="+incomplete, plan); r.code != 3 {
		t.Fatalf("the incomplete run: exit %d\n%s", r.code, r.stderr)
	}
	notJSON := filepath.Join(dir, "not.json")
	if err := os.WriteFile(notJSON, []byte(`{"hello": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	within := "thresholds[0]=recv_rate >= baseline.recv_rate * 0.5 and p99 <= baseline.p99 * 1000"
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings of standard output
		stderr string   // a substring of standard error
	}{
		{"within the baseline: passes, and the table compares", []string{"--baseline", base, "--set", within}, 0,
			[]string{"baseline.recv_rate=", "baseline.latency.p99=", "Compared with the baseline " + base, "mqplan compare: B against A", "\nPASS: "}, ""},
		{"twice the baseline's rate: fails", []string{"--baseline", base, "--set", "thresholds[0]=recv_rate >= baseline.recv_rate * 2"}, 1,
			[]string{"FAIL", "baseline.recv_rate="}, ""},
		{"no --baseline: the baseline threshold fails, saying why", []string{"--set", within}, 1,
			[]string{"no baseline to compare with (mqplan run --baseline FILE)"}, ""},
		{"a missing baseline file: 2 before the run", []string{"--baseline", filepath.Join(dir, "nope.json"), "--set", within}, 2,
			nil, "--baseline: open " + filepath.Join(dir, "nope.json")},
		{"an incomplete run as the baseline: 2 before the run", []string{"--baseline", incomplete, "--set", within}, 2,
			nil, "--baseline " + incomplete + ": that run did not complete (INCOMPLETE), so it cannot be a baseline"},
		{"--out over the baseline: 2 before the run", []string{"--baseline", base, "--set", within, "--out", "md=" + base}, 2,
			nil, "--out md=" + base + " would replace --baseline " + base},
		{"--out over the plan: 2 before the run", []string{"--out", "md=./" + plan}, 2,
			nil, "--out md=./" + plan + " would replace the plan"},
		{"an empty --baseline: 2, not no baseline", []string{"--baseline", "", "--set", within}, 2,
			nil, "--baseline: want a saved result's file name, got an empty one"},
		{"a file that is not a result: 2 before the run", []string{"--baseline", notJSON, "--set", within}, 2,
			nil, "--baseline: " + notJSON + ":"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, append(append([]string{"run", "--quiet"}, tt.args...), plan)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("exit %d, want %d with %q on stderr\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.stderr, r.stdout, r.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			if tt.code == 2 && r.stdout != "" {
				t.Errorf("refused after running:\n%s", r.stdout)
			}
		})
	}
	t.Run("saved with the result, re-rendered the same", func(t *testing.T) {
		// mqplan run --baseline ... --out json=now.json, then mqplan
		// report now.json: each format the same bytes as the run wrote,
		// the comparison included, with no baseline file at hand.
		run, again := filepath.Join(dir, "run"), filepath.Join(dir, "again")
		for _, d := range []string{run, again} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		formats := []string{"html", "junit", "md", "table"}
		outs := func(d string) []string {
			var args []string
			for _, f := range formats {
				args = append(args, "--out", f+"="+filepath.Join(d, f))
			}
			return args
		}
		now := filepath.Join(dir, "now.json")
		args := append([]string{"run", "--quiet", "--baseline", base, "--set", within, "--out", "json=" + now}, outs(run)...)
		if r := runCmd(t, append(args, plan)...); r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		if r := runCmd(t, append(append([]string{"report"}, outs(again)...), now)...); r.code != 0 {
			t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
		}
		saved, err := os.ReadFile(now)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(saved), `"baseline": {`) || !strings.Contains(string(saved), `"file": "`+base+`"`) {
			t.Errorf("the JSON result has no comparison naming %s", base)
		}
		wants := map[string]string{"html": "<h2>Compared with the baseline " + base + "</h2>", "junit": `<property name="baseline" value="` + base + `">`,
			"md": "### Compared with the baseline `" + base + "`", "table": "Compared with the baseline " + base}
		for _, f := range formats {
			first, err := os.ReadFile(filepath.Join(run, f))
			if err != nil {
				t.Fatal(err)
			}
			second, err := os.ReadFile(filepath.Join(again, f))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(first), wants[f]) {
				t.Errorf("the run's %s lacks %q", f, wants[f])
			}
			if string(first) != string(second) {
				t.Errorf("mqplan report's %s differs from the run's (%d and %d bytes)", f, len(first), len(second))
			}
		}
	})
	t.Run("the Markdown summary compares too", func(t *testing.T) {
		md := filepath.Join(dir, "summary.md")
		r := runCmd(t, "run", "--quiet", "--baseline", base, "--set", within, "--out", "md="+md, plan)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"### Compared with the baseline `" + base + "`", "| metric | baseline | this run | change | change % |  |", "| `latency.p99` |", "**Group sub**"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("the Markdown lacks %q:\n%s", want, b)
			}
		}
	})
}

// TestOutputsNeverReplaceInputs checks that report and compare refuse an
// --out that names a file they read: one typo must not replace the saved
// result (the last release's baseline) with a table.
func TestOutputsNeverReplaceInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	if r := runCmd(t, "run", "--quiet", "--out", "json="+a, "testdata/cli/pass.yaml"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	before, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"report over its input", []string{"report", "--out", "md=" + a, a}, "--out md=" + a + " would replace the saved result"},
		{"report over its input named another way", []string{"report", "--out", "json=" + dir + "/./a.json", a}, "would replace the saved result"},
		{"compare over A", []string{"compare", "--out", "json=" + a, a, a}, "would replace A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmd(t, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want 2 with %q", r.code, r.stderr, tc.stderr)
			}
			if after, _ := os.ReadFile(a); string(after) != string(before) {
				t.Fatal("the saved result was changed")
			}
		})
	}
}
