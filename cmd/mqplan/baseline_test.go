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
	t.Chdir("../..")
	const plan = "testdata/cli/pass.yaml"
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	if r := runCmd(t, "run", "--quiet", "--out", "json="+base, plan); r.code != 0 {
		t.Fatalf("the baseline run: exit %d\n%s", r.code, r.stderr)
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
}
