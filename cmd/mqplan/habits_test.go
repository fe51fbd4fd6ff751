package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHabitAnswers checks, from the command line, the answer each habit
// of a neighbouring tool (or of mqplan's own tables) gets: the plan or
// command line as a user writes it first, the exit code, and the hint
// that says what to write instead (or, for the forms accepted, that the
// plan is valid). The order case checks that an unknown key comes
// before the missing key it explains.
func TestHabitAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const groups = "name: habits\ngroups:\n  - name: sub\n    subscribe: \"h/%i\"\n  - name: pub\n"
	const pub = "    publish:\n      topic: \"h/%i\"\n      every: 1s\n"
	plan := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	threshold := func(name, th string) string {
		return plan(name, groups+pub+"duration: 1s\nthresholds:\n  - "+th+"\n")
	}
	tests := []struct {
		name string
		args []string
		code int
		hint string // in the output; for code 0, the validate line
	}{
		{"k6's p(99)", []string{"validate", threshold("k6", "p(99) < 50")}, 2, "write p99 here: p99 < 50ms"},
		{"the table's e2e row", []string{"validate", threshold("e2e", "e2e.p99 < 50ms")}, 0, "e2e.yaml: ok"},
		{"a typo of the e2e row", []string{"validate", threshold("e2etypo", "e2e.p98 < 50ms")}, 2, `unknown metric "e2e.p98"; did you mean "e2e.p99"?`},
		{"a percentage of a rate metric", []string{"validate", threshold("pct", "loss_rate < 0.1%")}, 0, "pct.yaml: ok"},
		{"a percentage of a count", []string{"validate", threshold("pctcount", "sent > 1%")}, 2, "1% is a share"},
		{"an unquoted JSON payload", []string{"validate", plan("payload", groups+"    publish:\n      topic: t\n      every: 1s\n      payload: {\"id\": \"%c\", \"seq\": %s}\nduration: 1s\n")}, 2,
			`quote the payload template: payload: '{"id": "%c", "seq": %s}'`},
		{"emqtt-bench's interval, before missing every", []string{"validate", plan("interval", groups+"    publish:\n      topic: t\n      interval: 5s\nduration: 1s\n")}, 2,
			"unknown key \"interval\": did you mean \"every\"? emqtt-bench's -I/--interval is every here: one client's interval, e.g. every: 5s (or rate: 500/s for the whole group)\n" +
				filepath.Join(dir, "interval.yaml") + ":8:7: groups[1].publish: missing \"every\" or \"rate\""},
		{"clients in a group", []string{"validate", plan("clients", groups+"    clients: 5\n"+pub+"duration: 1s\n")}, 2, `unknown key "clients": did you mean "count"?`},
		{"stages in a group", []string{"validate", plan("stages", groups+"    stages: [{duration: 1s, rate: 1/s}]\n"+pub+"duration: 1s\n")}, 2, "a group's own stages go under its publish: publish.stages"},
		{"k6's --duration", []string{"run", "testdata/cli/pass.yaml", "--duration", "10s"}, 2,
			"mqplan: run: unknown flag --duration: plan values are set with --set, e.g. --set duration=10s\nRun \"mqplan run --help\" for its flags and examples.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			out := r.stdout + r.stderr
			if r.code != tt.code || !strings.Contains(out, tt.hint) {
				t.Errorf("exit %d, want %d with %q\n%s", r.code, tt.code, tt.hint, out)
			}
		})
	}
}
