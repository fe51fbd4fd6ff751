package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStageMetrics runs a staged plan whose thresholds read each stage,
// by name and by index, then shows its saved result with mqplan report:
// the stages table reads the same, and a threshold on a stage the plan
// lacks is a plan error (exit 2) before anything runs.
func TestStageMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved := filepath.Join(dir, "result.json")
	plan := "testdata/plans/valid/stages.yaml"
	short := []string{"--set", "warmup=200ms", "--set", "drain=2s", "--set", "stages[0].duration=500ms", "--set", "stages[1].duration=500ms",
		"--set", "stages[3].duration=500ms", "--set", "stages[4].duration=500ms", "--set", "stages[5].duration=200ms"}
	tests := []struct {
		name      string
		threshold string
		code      int
		want      string
	}{
		{"by name and index", "stages.low.loss_rate == 0 and stages[3].sent > 0 and stages[\"per-client\"].sent > stages.stop.sent", 0, "stages.high.sent="},
		{"a stage that fails", "stages.high.p99 < 1ns", 1, "stages.high.latency.p99="},
		{"an unknown stage", "stages.hihg.p99 < 1s", 2, `unknown stage "hihg"; did you mean "high"?`},
		{"an index past the end", "stages[6].p99 < 1s", 2, "unknown stage index 6: the plan's 6 stages are numbered 0 to 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// disturbance: fail, so that "a stage that fails" fails on a
			// busy machine too, where its 1ns bound is not judged.
			args := append([]string{"run", "--quiet", "--out", "json=" + saved, "--set", "thresholds=[" + quoteYAML(tt.threshold) + "]", "--set", "disturbance=fail"}, short...)
			r := runCmd(t, append(args, plan)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code == 2 {
				if !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "thresholds[0]") {
					t.Errorf("stderr does not say %q at thresholds[0]:\n%s", tt.want, r.stderr)
				}
				if v := runCmd(t, "validate", "--set", "thresholds=["+quoteYAML(tt.threshold)+"]", plan); v.code != 2 || !strings.Contains(v.stderr, tt.want) {
					t.Errorf("validate: exit %d, want 2 saying %q:\n%s", v.code, tt.want, v.stderr)
				}
				return
			}
			table := section(r.stdout, "Stages (")
			if table == "" || !strings.Contains(table, "| high ") {
				t.Fatalf("no stages table in:\n%s", r.stdout)
			}
			if !strings.Contains(r.stdout, tt.want) {
				t.Errorf("the report does not show %q:\n%s", tt.want, r.stdout)
			}
			rep := runCmd(t, "report", saved)
			if got := section(rep.stdout, "Stages ("); got != table {
				t.Errorf("mqplan report shows the stages as\n%s\nthe run showed\n%s", got, table)
			}
			if rep.code != tt.code {
				t.Errorf("mqplan report: exit %d, the run's was %d", rep.code, tt.code)
			}
		})
	}
}

// quoteYAML quotes s as a YAML double-quoted scalar.
func quoteYAML(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// section is the part of a table report from the line starting with
// title to the next blank line; "" when there is none.
func section(out, title string) string {
	i := strings.Index(out, "\n"+title)
	if i < 0 {
		return ""
	}
	rest := out[i+1:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// judged reports whether code is the exit code of a run that completed
// and was judged: PASS, FAIL or INCONCLUSIVE (a busy machine's latency
// not judged), as a test that compares counts, not verdicts, accepts.
func judged(code int) bool {
	return code == exitPass || code == exitFail || code == exitInconclusive
}
