package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStepSummary: with GITHUB_STEP_SUMMARY set, `mqplan run` appends its
// Markdown summary to that file (after what earlier steps wrote, run after
// run), whatever the verdict; a summary that cannot be written is a
// warning and the verdict stands.
func TestStepSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const before = "## an earlier command's summary\n"
	tests := []struct {
		name    string
		path    string // GITHUB_STEP_SUMMARY
		plans   []string
		code    int
		stderr  string
		want    []string // the summaries' headings, in order
		noFile  bool
		keepOld bool // the file had content before
	}{
		{name: "set: appended after what was there", path: filepath.Join(dir, "pass.md"), keepOld: true,
			plans: []string{"testdata/cli/pass.yaml"}, code: 0,
			want: []string{"## ✅ mqplan cli-pass: PASS"}},
		{name: "a failing run: appended too, with its failures", path: filepath.Join(dir, "fail.md"),
			plans: []string{"testdata/cli/fail.yaml"}, code: 1,
			want: []string{"## ❌ mqplan"}},
		{name: "two runs: two summaries", path: filepath.Join(dir, "two.md"), keepOld: true,
			plans: []string{"testdata/cli/pass.yaml", "testdata/cli/pass.yaml"}, code: 0,
			want: []string{"## ✅ mqplan cli-pass: PASS", "## ✅ mqplan cli-pass: PASS"}},
		{name: "unwritable: a warning, the verdict stands", path: filepath.Join(dir, "no", "such", "dir.md"),
			plans: []string{"testdata/cli/pass.yaml"}, code: 0, stderr: "warning: GITHUB_STEP_SUMMARY: open " + filepath.Join(dir, "no", "such", "dir.md"), noFile: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"GITHUB_STEP_SUMMARY": tt.path}
			if tt.keepOld {
				if err := os.WriteFile(tt.path, []byte(before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, plan := range tt.plans {
				r := runCmdWith(t, cmdOpts{vars: vars}, "run", "--quiet", plan)
				if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
					t.Fatalf("exit %d, want %d with %q on stderr\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.stderr, r.stdout, r.stderr)
				}
			}
			b, err := os.ReadFile(tt.path)
			if tt.noFile {
				if err == nil {
					t.Errorf("a file was written: %s", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			if tt.keepOld && !strings.HasPrefix(got, before) {
				t.Errorf("what was there is gone:\n%s", got)
			}
			var headings []string
			for _, line := range strings.Split(got, "\n") {
				if strings.HasPrefix(line, "## ") && line != strings.TrimSuffix(before, "\n") {
					headings = append(headings, line)
				}
			}
			if len(headings) != len(tt.want) {
				t.Fatalf("summaries %q, want %q\n%s", headings, tt.want, got)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(headings[i], w) {
					t.Errorf("summary %d is %q, want %q", i, headings[i], w)
				}
			}
			// Each summary has its sections and its three charts.
			for section, per := range map[string]int{"### Thresholds": 1, "### Groups": 1, "### Latency": 1, "### Delivery": 1, "```mermaid\n%%{init": 3, "xychart-beta\n": 3} {
				if got := strings.Count(got, section); got != per*len(tt.want) {
					t.Errorf("%q appears %d times, want %d", section, got, per*len(tt.want))
				}
			}
		})
	}
}
