package main

import (
	"strings"
	"testing"
)

// TestCommandLineErrorsFitThreeLines checks that a command-line mistake
// of every command (an unknown flag, a flag without its value, missing
// or extra arguments) is at most three lines on standard error, starting
// with "mqplan:" and pointing at --help, never the whole usage, which
// would scroll the mistake off the screen.
func TestCommandLineErrorsFitThreeLines(t *testing.T) {
	const plan = "testdata/cli/pass.yaml"
	var cases [][]string
	for _, c := range []string{"run", "validate", "explain", "report", "compare", "merge", "find-max", "broker", "schema", "conn", "sub", "pub"} {
		cases = append(cases, []string{c, "--no-such-flag"}, []string{c, plan, "--no-such-flag", "10s"})
	}
	cases = append(cases,
		[]string{"run"}, []string{"run", plan, plan}, []string{"run", "--json"}, []string{"run", plan, "--duration", "10s"},
		[]string{"run", "--procs", "many", plan}, []string{"validate"}, []string{"explain"}, []string{"report"},
		[]string{"compare", "a.json"}, []string{"merge"}, []string{"find-max"}, []string{"find-max", "--knob"},
		[]string{"broker", "extra"}, []string{"schema", "extra"}, []string{"completion"}, []string{"completion", "tcsh"},
		[]string{"nosuchcommand"}, []string{"pub", "-c"})
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runCmd(t, args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			if len(lines) > 3 || !strings.HasPrefix(lines[0], "mqplan:") || !strings.Contains(r.stderr, "help") {
				t.Errorf("stderr is %d lines (want at most 3, the first starting mqplan:, pointing at help):\n%s", len(lines), r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout is not empty:\n%s", r.stdout)
			}
		})
	}
}

// TestFlagHabits checks the suggestion each habit of another tool's
// command line gets.
func TestFlagHabits(t *testing.T) {
	const plan = "testdata/cli/pass.yaml"
	for _, tt := range []struct {
		name string
		args []string
		hint string
	}{
		{"k6's --duration: --set", []string{"run", plan, "--duration", "10s"}, "mqplan: run: unknown flag --duration: plan values are set with --set, e.g. --set duration=10s\nRun \"mqplan run --help\""},
		{"--duration=VALUE", []string{"explain", "--duration=1m", plan}, "--set duration=1m"},
		{"--warmup without a value", []string{"run", plan, "--warmup"}, "--set warmup=VALUE"},
		{"k6's -d", []string{"run", "-d", "30s", plan}, "unknown flag -d; set the plan's duration with --set duration=30s"},
		{"a password on the command line", []string{"run", "--password", "x", plan}, "--password-file FILE or the environment variable MQPLAN_PASSWORD"},
		{"-u", []string{"run", "-u", "bob", plan}, "the user name is --username NAME"},
		{"--host", []string{"run", "--host", "h", plan}, "--broker mqtt://HOST:1883"},
		{"k6's --vus", []string{"run", "--vus", "10", plan}, "--set groups.NAME.count=N"},
		{"a typo of a flag", []string{"run", "--quite", plan}, "unknown flag --quite; did you mean --quiet?"},
		{"a typo of a command", []string{"valdate", plan}, `unknown command "valdate"; did you mean "validate"?`},
		{"a flag without its value", []string{"run", plan, "--out"}, "mqplan: run: --out needs a value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.hint) {
				t.Errorf("exit %d, stderr:\n%s\nwant 2 with %q", r.code, r.stderr, tt.hint)
			}
		})
	}
}
